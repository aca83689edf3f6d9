/// A frame as LiveKit's processors see it: a picture with its size, rotation and capture time.
///
/// LiveKit's `VideoFrame` holds a `VideoBuffer` (a `CVPixelBuffer` or an I420 buffer); on Linux
/// the buffer is a `PixelBuffer` (NV12 or I420 from a camera).
public struct VideoFrame: Sendable {
  /// The size of the picture, as given to ``init(dimensions:rotation:timeStampNs:buffer:)``. The
  /// SDK sends the buffer's own size (`PixelBuffer/dimensions`) when they differ.
  public let dimensions: Dimensions
  /// How far the picture is to be turned clockwise to be upright. Frames from the SDK are upright
  /// already (`._0`); a frame a processor returns with another rotation is turned by the SDK
  /// before it is shown and sent (90° and 270° swap width and height).
  public let rotation: VideoRotation
  /// The capture time in nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`, GStreamer's system
  /// clock, as `PixelBuffer/timestamp` has it); 0 when not known. The time of a frame a
  /// processor returns becomes the time it is sent with.
  public let timeStampNs: Int64
  /// The picture.
  public let buffer: PixelBuffer

  /// A frame of `buffer`.
  /// - Parameters:
  ///   - dimensions: the size of the picture (normally `buffer.dimensions`).
  ///   - rotation: how far to turn it clockwise to be upright (see ``rotation``).
  ///   - timeStampNs: the capture time in nanoseconds on the monotonic clock, 0 when not known.
  ///   - buffer: the picture.
  public init(dimensions: Dimensions, rotation: VideoRotation, timeStampNs: Int64, buffer: PixelBuffer) {
    self.dimensions = dimensions
    self.rotation = rotation
    self.timeStampNs = timeStampNs
    self.buffer = buffer
  }
}

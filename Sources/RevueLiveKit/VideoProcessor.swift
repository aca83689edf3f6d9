@_spi(Faces) import RevueSDK
import Synchronization

/// Changes each frame of a camera track before it is shown and sent: LiveKit's processor, which
/// takes and returns a ``VideoFrame`` (RevueSDK's `RevueSDK.VideoProcessor` takes a `PixelBuffer`).
///
/// In a file that imports only RevueLiveKit, `VideoProcessor` names this protocol. Give one to
/// `LocalVideoTrack/createCameraTrack(name:options:processor:)`; the SDK runs it through
/// RevueSDK's processor, so the frames it returns are the ones renderers and receivers get.
///
/// Unlike RevueSDK's, it is not `Sendable`, as LiveKit's is not: a seed's non-final
/// `class CustomProcessor: VideoProcessor` compiles unchanged. The calls for one track never
/// overlap (while the camera switches, the old and the new camera's threads take turns); a
/// processor given to several tracks, or whose state the App changes from other threads,
/// guards that state itself.
public protocol VideoProcessor: AnyObject {
  /// Called once per frame on the capture thread (GStreamer's streaming thread). Return the frame
  /// to send (the same one or a new one), or nil to drop it. A slow processor lowers the frame
  /// rate. The frame comes upright (rotation `._0`). A frame returned with another rotation is
  /// turned by it before it is shown and sent (on Apple platforms receivers turn it; a Linux
  /// receiver has nothing to read the rotation from).
  func process(frame: VideoFrame) -> VideoFrame?
}

/// Runs a LiveKit-style processor as RevueSDK's processor of a track: the one frame path.
final class LiveKitProcessorAdapter: RevueSDK.VideoProcessor, @unchecked Sendable {
  // Safety (@unchecked): `processor` is never replaced and only called under `turn`, so the
  // capture threads of one track (two for a moment while the camera switches) never call it at
  // once; state the App shares with it is the App's to guard, as in LiveKit.

  /// The App's processor.
  private let processor: any VideoProcessor
  /// Held while `processor` runs and its frame is turned.
  private let turn = Mutex(())
  /// Turns the frames returned with a rotation.
  private let converter = FrameConverter(category: "VideoProcessor")

  init(_ processor: any VideoProcessor) { self.processor = processor }

  func process(pixelBuffer: PixelBuffer) -> PixelBuffer? {
    let time = pixelBuffer.timestamp.map { Int64(clamping: $0.nanoseconds) } ?? 0
    let frame = VideoFrame(
      dimensions: pixelBuffer.dimensions, rotation: ._0, timeStampNs: time, buffer: pixelBuffer)
    return turn.withLock { _ in
      guard let result = processor.process(frame: frame) else { return nil }
      let timed = Self.timed(result)
      guard result.rotation != ._0 else { return timed }
      // Dropped, with the reason logged, when it cannot be turned.
      return converter.convert(timed, rotation: result.rotation)
    }
  }

  /// The frame's picture carrying the frame's time (a picture a processor made afresh has none),
  /// so that it is sent with the time the processor gave it.
  static func timed(_ frame: VideoFrame) -> PixelBuffer {
    let picture = frame.buffer
    guard frame.timeStampNs > 0 else { return picture }
    let wanted = UInt64(frame.timeStampNs)
    guard picture.timestamp?.nanoseconds != wanted else { return picture }
    var buffer = picture.buffer
    buffer.pts = .init(nanoseconds: wanted)
    return
      (try? PixelBuffer(
        wrapping: buffer, width: picture.width, height: picture.height, format: picture.format,
        colorRange: picture.colorRange)) ?? picture
  }
}

extension LocalVideoTrack {
  /// The camera's track with a LiveKit-style processor (seed 004's
  /// `createCameraTrack(processor:)`); the camera starts with
  /// ``LocalParticipant/setCamera(enabled:options:)`` or its capturer's
  /// ``VideoCapturer/startCapture()``.
  ///
  /// The processor is required here: calls without one (`createCameraTrack()`,
  /// `createCameraTrack(name:options:)`) are RevueSDK's own, the same camera track. The track's
  /// `LocalVideoTrack/processor` is RevueSDK's adapter of `processor`.
  /// - Parameters:
  ///   - name: the track's name; `camera` by default.
  ///   - options: what the camera produces.
  ///   - processor: changes each frame before it is shown and sent.
  /// - Returns: the track, its camera not started.
  public static func createCameraTrack(
    name: String = "camera", options: CameraCaptureOptions = CameraCaptureOptions(),
    processor: any VideoProcessor
  ) -> LocalVideoTrack {
    createCameraTrack(name: name, options: options, processor: LiveKitProcessorAdapter(processor))
  }
}

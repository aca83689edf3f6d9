import Foundation
import GStreamer
import Synchronization

/// The capturer of a buffer track: the App pushes its own frames with ``capture(_:)``.
///
/// It is idle until ``VideoCapturer/startCapture()`` and drops every frame meanwhile. NV12 and
/// I420 frames pass without a copy; BGRA frames are converted to NV12; other formats are dropped
/// with a warning in the log. Each frame is sent at its own size. Call it from any thread,
/// concurrently: a frame that arrives while another is still being processed is dropped, so a
/// slow processor lowers the frame rate and nothing queues up.
public final class BufferCapturer: VideoCapturer, @unchecked Sendable {
  // Safety (@unchecked): the in-flight flag is atomic and the converter is Sendable.

  private let inFlight = Atomic<Bool>(false)
  /// Used by one frame at a time (the in-flight flag).
  private let converter = Mutex<FrameConverter?>(nil)

  override init() {
    super.init()
    converter.withLock {
      $0 = FrameConverter(category: "BufferCapturer") { [weak self] fault in self?.report(fault) }
    }
  }

  deinit {
    if captureState == .capturing {
      RevueLog.log(.error, "BufferCapturer", "released while capturing: call stopCapture() before releasing it")
    }
  }

  /// Stops capturing and frees the conversion pipelines.
  public override func stopCapture() async throws {
    try await super.stopCapture()
    converter.withLock { $0 }?.reset()
  }

  /// Sends an upright frame, timed now.
  public func capture(_ pixelBuffer: PixelBuffer) {
    capture(pixelBuffer, timeStampNs: 0, rotation: ._0)
  }

  /// Sends a frame, turned clockwise by `rotation` before the processor sees it (90° and 270°
  /// swap width and height).
  /// - Parameters:
  ///   - pixelBuffer: the frame.
  ///   - rotation: how far to turn it clockwise.
  ///   - timeStampNs: the frame's capture time in nanoseconds on the monotonic clock
  ///   (`CLOCK_MONOTONIC`, as `clock_gettime` and `DispatchTime.now().uptimeNanoseconds` give it,
  ///   the clock microphone audio is timed on), kept as the frame's time, so that frames from a
  ///   late source (a network camera, slow processing) stay in sync with audio; 0 times the frame
  ///   when it is pushed. Seed 000 says the value is "not used yet"; Revue uses it, on purpose.
  public func capture(_ pixelBuffer: PixelBuffer, timeStampNs: Int64, rotation: VideoRotation) {
    guard captureState == .capturing else {
      RevueLog.log(.debug, "BufferCapturer", "frame dropped: the capturer is idle (call startCapture() first)")
      return
    }
    guard [.nv12, .i420, .bgra].contains(pixelBuffer.format) else {
      RevueLog.log(
        .warning, "BufferCapturer", "frame dropped: \(pixelBuffer.format) is not accepted (push NV12, I420 or BGRA)")
      return
    }
    guard inFlight.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
      RevueLog.log(.debug, "BufferCapturer", "frame dropped: the previous frame is still being processed")
      return
    }
    defer { inFlight.store(false, ordering: .releasing) }
    var buffer = pixelBuffer.buffer
    buffer.pts = ClockTime(nanoseconds: timeStampNs > 0 ? UInt64(timeStampNs) : Self.monotonicNow())
    let timed = pixelBuffer.replacingBuffer(buffer)
    guard let upright = converter.withLock({ $0 })?.convert(timed, rotation: rotation) else { return }
    send(upright)
  }

  /// Now on the monotonic clock, in nanoseconds.
  static func monotonicNow() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }
}

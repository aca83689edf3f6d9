import Foundation
import RevueSDK
import Synchronization

/// Pushes a ``StampedFrameSource``'s frames into a ``BufferCapturer`` at a steady frame rate, as
/// a camera would, on a thread of its own, until it has pushed its frames or is stopped.
///
/// Frame `i` (numbered `firstNumber + i`) is due at `i / fps` seconds after the start, on
/// `CLOCK_MONOTONIC`; the thread sleeps until then, makes the frame, and pushes it with the
/// moment it was made as its capture time (``BufferCapturer/capture(_:timeStampNs:rotation:)``'s
/// clock). A frame made late (the machine was busy) is pushed at once, and the next is still
/// due on the original schedule, so the rate does not drift. The capturer must be capturing
/// (``VideoCapturer/startCapture()``) or it drops the frames.
public final class StampedFrameDriver: Sendable {
  /// The source of the frames.
  public let source: StampedFrameSource
  /// Frames per second.
  public let fps: Double
  /// The number of the first frame.
  public let firstNumber: Int
  /// The frames to push in all (`Int.max`: until stopped).
  public let frames: Int

  private struct State {
    var pushed = 0
    var stopping = false
    var ended = false
    var error: MediaBufferError?
    var waiters: [CheckedContinuation<Void, Never>] = []
  }

  private let state = Mutex(State())

  /// Starts pushing `frames` frames of `source`, numbered from `firstNumber`, into `capturer`
  /// at `fps` frames per second, the first one now.
  public init(
    pushing source: StampedFrameSource, into capturer: BufferCapturer, fps: Double = 30, frames: Int = .max,
    firstNumber: Int = 0
  ) {
    precondition(fps > 0 && fps <= 1000, "a frame rate of \(fps) is not one a camera has")
    self.source = source
    self.fps = fps
    self.firstNumber = firstNumber
    self.frames = frames
    let thread = Thread { [self] in run(capturer) }
    thread.name = "revue-stamped-frames"
    thread.start()
  }

  /// Frames pushed so far.
  public var framesPushed: Int { state.withLock { $0.pushed } }

  /// Whether the driver has ended (all its frames pushed, or stopped).
  public var hasEnded: Bool { state.withLock { $0.ended } }

  /// Why the driver ended early, if a frame could not be made (its memory could not be written).
  public var error: MediaBufferError? { state.withLock { $0.error } }

  /// Asks the driver to stop: it pushes no frame after this returns, and its thread ends within
  /// one frame interval (``ended()`` waits for that).
  public func stop() { state.withLock { $0.stopping = true } }

  /// Waits until the driver has ended; returns the frames it pushed.
  @discardableResult public func ended() async -> Int {
    await withCheckedContinuation { continuation in
      let ended = state.withLock { state in
        if !state.ended { state.waiters.append(continuation) }
        return state.ended
      }
      if ended { continuation.resume() }
    }
    return framesPushed
  }

  private func run(_ capturer: BufferCapturer) {
    let interval = 1e9 / fps
    let start = Self.monotonicNanoseconds()
    var index = 0
    while index < frames {
      Self.sleep(until: start + UInt64((Double(index) * interval).rounded()))
      let now = Self.monotonicNanoseconds()
      do {
        let frame = try source.frame(firstNumber + index)
        // Pushed under the lock, so that none is pushed once stop() has returned.
        let stopped = state.withLock { state in
          if !state.stopping {
            capturer.capture(frame, timeStampNs: Int64(now), rotation: ._0)
            state.pushed += 1
          }
          return state.stopping
        }
        if stopped { break }
      } catch {
        state.withLock { $0.error = error }
        break
      }
      index += 1
    }
    let waiters = state.withLock { state in
      state.ended = true
      defer { state.waiters.removeAll() }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Now on `CLOCK_MONOTONIC` (GStreamer's system clock, the capture clock of the SDK), in nanoseconds.
  public static func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }

  /// Sleeps until `deadline` on `CLOCK_MONOTONIC`.
  private static func sleep(until deadline: UInt64) {
    var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
  }
}

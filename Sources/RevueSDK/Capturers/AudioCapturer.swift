import GStreamer
import Synchronization

/// Where an audio capturer hands its buffers: the local track that owns it.
protocol AudioBufferSink: AnyObject, Sendable {
  /// Hands a buffer in the track's format to the renderers and publications.
  func deliver(_ buffer: AudioPCMBuffer)
}

/// Produces the audio of a local audio track: the microphone, or audio the App pushes
/// (``AudioBufferCapturer``). The SDK makes capturers; there is no public initializer.
public class AudioCapturer: @unchecked Sendable {
  // Safety (@unchecked): every mutable field is in a Mutex.

  /// A change of the capturer.
  public enum Event: Sendable, Hashable {
    /// The capture state changed.
    case state(CaptureState)
    /// Capture stopped by itself (the microphone was unplugged or failed): why.
    case interrupted(String)
    /// An element of the capture pipeline warned or failed, in GStreamer's words (a failure
    /// also stops capture: ``interrupted(_:)`` follows).
    case fault(MediaFault)
  }

  private let state = Mutex(CaptureState.idle)
  private let broadcast = Broadcast<Event>()
  private let sink = Mutex(WeakAudioSink())

  init() {}

  deinit { broadcast.finish() }

  /// Whether the capturer is capturing. Safe to read from any thread.
  public var captureState: CaptureState { state.withLock { $0 } }

  /// The capturer's changes from now on, in order.
  public var events: AsyncStream<Event> { broadcast.subscribe() }

  /// Starts capturing.
  /// - Throws: ``RevueError`` when capture cannot start.
  public func startCapture() async throws { setCaptureState(.capturing) }

  /// Stops capturing.
  /// - Throws: ``RevueError`` when capture cannot stop cleanly.
  public func stopCapture() async throws { setCaptureState(.idle) }

  func setCaptureState(_ newState: CaptureState) {
    state.withLock { state in
      guard state != newState else { return }
      state = newState
      broadcast.send(.state(newState))
    }
  }

  /// Reports a warning or error of the capture pipeline (logged too).
  func report(_ fault: MediaFault) {
    RevueLog.log(fault.severity == .error ? .error : .warning, String(describing: Self.self), "\(fault)")
    state.withLock { _ in broadcast.send(.fault(fault)) }
  }

  /// Reports that capture stopped by itself, and why, and goes idle.
  func interrupt(reason: String) {
    state.withLock { state in
      broadcast.send(.interrupted(reason))
      guard state != .idle else { return }
      state = .idle
      broadcast.send(.state(.idle))
    }
  }

  /// The track buffers go to.
  var bufferSink: (any AudioBufferSink)? {
    get { sink.withLock { $0.sink } }
    set { sink.withLock { $0.sink = newValue } }
  }
}

/// A weak reference to a capturer's track (the track owns the capturer).
struct WeakAudioSink: @unchecked Sendable {
  // Safety: only read and written under the capturer's mutex; the sink is Sendable.
  weak var sink: (any AudioBufferSink)?
}

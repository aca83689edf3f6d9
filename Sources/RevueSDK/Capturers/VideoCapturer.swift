import GStreamer
import Synchronization

/// Where a capturer hands its frames: the local track that owns it.
protocol VideoFrameSink: AnyObject, Sendable {
  /// Runs the track's processor on `frame`, on the capture thread; nil drops the frame.
  func process(_ frame: PixelBuffer) -> PixelBuffer?
  /// Hands a processed frame to the renderers and publications (or the placeholder while muted).
  func deliver(_ frame: PixelBuffer)
}

/// Produces the frames of a local video track: the camera, the screen share, or frames the App
/// pushes (``BufferCapturer``). The SDK makes capturers; there is no public initializer.
public class VideoCapturer: @unchecked Sendable {
  // Safety (@unchecked): every mutable field is in a Mutex; subclasses follow the same rule.

  /// A change of the capturer, as its delegates are told.
  public enum Event: Sendable, Hashable {
    /// The size of the frames sent changed; nil when capture stopped.
    case dimensions(Dimensions?)
    /// The capture state changed.
    case state(CaptureState)
    /// The camera settled for a smaller size than asked.
    case downgradedResolution(requested: Dimensions, actual: Dimensions)
    /// Capture stopped by itself (the camera was unplugged or failed): why.
    case interrupted(String)
    /// An element of the capture pipeline warned or failed, in GStreamer's words (a failure
    /// also stops capture: ``interrupted(_:)`` follows).
    case fault(MediaFault)
  }

  private struct State {
    var captureState: CaptureState = .idle
    var dimensions: Dimensions?
    /// The size of frames that came while starting, before the state turned to capturing.
    var pendingDimensions: Dimensions?
  }

  private let state = Mutex(State())
  private let broadcast = Broadcast<Event>()
  private let delegateEvents: AsyncStream<Event>.Continuation
  private let sink = Mutex<WeakFrameSink>(WeakFrameSink())

  /// The capturer's delegates, held weakly, told of every change on the main actor.
  public let delegates = MulticastDelegate<any VideoCapturerDelegate>()

  init() {
    // Bounded: an App whose main actor never runs (a command-line tool without a main loop)
    // would otherwise queue every event for its delegates forever.
    let (stream, continuation) = AsyncStream.makeStream(
      of: Event.self, bufferingPolicy: .bufferingNewest(Broadcast<Event>.keptValues))
    delegateEvents = continuation
    Task { @MainActor [weak self] in
      for await event in stream {
        guard let self else { return }
        for delegate in self.delegates.all {
          switch event {
          case .dimensions(let dimensions): delegate.capturer(self, didUpdate: dimensions)
          case .state(let state): delegate.capturer(self, didUpdate: state)
          case .downgradedResolution(let requested, let actual):
            delegate.capturer(self, didDowngradeResolution: requested, to: actual)
          case .interrupted(let reason): delegate.capturer(self, didInterrupt: reason)
          case .fault(let fault): delegate.capturer(self, didReport: fault)
          }
        }
      }
    }
  }

  deinit {
    delegateEvents.finish()
    broadcast.finish()
  }

  /// Whether the capturer is capturing. Safe to read from any thread.
  public var captureState: CaptureState { state.withLock { $0.captureState } }

  /// The size of the frames sent (after rotation and processing), nil before the first frame
  /// and after capture stops. Safe to read from any thread.
  public var dimensions: Dimensions? { state.withLock { $0.dimensions } }

  /// The capturer's changes from now on, in order: the same events as the delegates get, for
  /// code without a main loop.
  public var events: AsyncStream<Event> { broadcast.subscribe() }

  /// Starts capturing.
  /// - Throws: ``RevueError`` when capture cannot start.
  public func startCapture() async throws {
    setCaptureState(.capturing)
  }

  /// Stops capturing; the size becomes nil.
  /// - Throws: ``RevueError`` when capture cannot stop cleanly.
  public func stopCapture() async throws {
    setCaptureState(.idle)
  }

  // MARK: - For subclasses and tracks

  /// Changes the state (and clears the size when capture stops), telling delegates and streams.
  func setCaptureState(_ newState: CaptureState) {
    state.withLock { state in change(&state, to: newState) }
  }

  /// The state change of ``setCaptureState(_:)``, under the state lock.
  private func change(_ state: inout State, to newState: CaptureState) {
    guard state.captureState != newState else { return }
    state.captureState = newState
    emit(.state(newState))
    if newState == .capturing, let pending = state.pendingDimensions {
      state.dimensions = pending
      emit(.dimensions(pending))
    }
    state.pendingDimensions = nil
    if newState != .capturing, state.dimensions != nil {
      state.dimensions = nil
      emit(.dimensions(nil))
    }
  }

  /// Records the size of a frame sent; tells delegates only when it changed. Frames sent while a
  /// capturer starts count once it is capturing.
  func updateDimensions(_ dimensions: Dimensions) {
    state.withLock { state in
      guard state.captureState == .capturing else {
        state.pendingDimensions = dimensions
        return
      }
      guard state.dimensions != dimensions else { return }
      state.dimensions = dimensions
      emit(.dimensions(dimensions))
    }
  }

  /// Reports that the camera settled for a smaller size than asked.
  func emitDowngrade(requested: Dimensions, actual: Dimensions) {
    state.withLock { _ in emit(.downgradedResolution(requested: requested, actual: actual)) }
  }

  /// Reports that capture stopped by itself, and why, and goes idle: under one lock, so that
  /// whoever sees ``Event/interrupted(_:)`` already reads ``CaptureState/idle``.
  func interrupt(reason: String) {
    state.withLock { state in
      emit(.interrupted(reason))
      change(&state, to: .idle)
    }
  }

  /// Reports a warning or error of the capture pipeline (logged too).
  func report(_ fault: MediaFault) {
    RevueLog.log(fault.severity == .error ? .error : .warning, String(describing: Self.self), "\(fault)")
    state.withLock { _ in emit(.fault(fault)) }
  }

  /// Tells delegates and streams; called under the state lock so that events keep their order.
  private func emit(_ event: Event) {
    broadcast.send(event)
    delegateEvents.yield(event)
  }

  /// The track frames go to.
  var frameSink: (any VideoFrameSink)? {
    get { sink.withLock { $0.sink } }
    set { sink.withLock { $0.sink = newValue } }
  }

  /// Runs the processor, measures, and delivers one frame on the calling thread.
  /// - Returns: whether the frame was delivered (not dropped by the processor).
  @discardableResult
  func send(_ frame: PixelBuffer) -> Bool {
    guard let sink = frameSink else {
      updateDimensions(frame.dimensions)
      return true
    }
    guard let processed = sink.process(frame) else { return false }
    updateDimensions(processed.dimensions)
    sink.deliver(processed)
    return true
  }
}

/// A weak reference to a capturer's track (the track owns the capturer).
struct WeakFrameSink: @unchecked Sendable {
  // Safety: only read and written under the capturer's mutex; the sink is Sendable.
  weak var sink: (any VideoFrameSink)?
}

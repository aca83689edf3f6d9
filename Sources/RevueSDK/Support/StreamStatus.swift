import Synchronization

/// Whether a publication or a received track is running.
public enum StreamState: Sendable, Hashable {
  /// Sending or receiving.
  case running
  /// Ended by a fault of its pipeline (an encoder, decoder or socket that failed): what it was.
  /// Nothing else stopped.
  case failed(MediaFault)
  /// Stopped by the App (unpublished, disconnected).
  case stopped
}

/// A change of a publication or of a received track.
public enum StreamEvent: Sendable, Hashable {
  /// The state changed.
  case state(StreamState)
  /// An element of its pipeline warned or failed (a failure also ends the stream:
  /// ``state(_:)`` with ``StreamState/failed(_:)`` follows; except in an ``RTSPBroadcast``, whose
  /// failed media ends alone).
  case fault(MediaFault)
  /// A received track's sender muted it, or turned its camera off (true), or unmuted it
  /// (false); ``Track/isMuted`` says the same.
  case muted(Bool)
  /// A ``StreamOutput`` lost its connection (its pipeline failed: ``fault(_:)`` said why) and
  /// builds it again after `after`; `attempt` counts from 1 since it last ran steadily.
  case reconnecting(attempt: Int, after: Duration)
  /// A ``StreamOutput``'s pipeline of attempt `attempt` is playing again.
  case reconnected(attempt: Int)
}

/// The state and events of one stream (a publication or a received track), fed by its
/// pipeline's faults.
final class StreamStatus: Sendable {
  private let current = Mutex(StreamState.running)
  private let broadcast = Broadcast<StreamEvent>()
  /// What the log calls the stream, such as `the vp8 publication`.
  private let name: String
  /// Called once, when the stream stops or fails.
  private let ended: @Sendable () -> Void

  init(name: String, ended: @escaping @Sendable () -> Void = {}) {
    self.name = name
    self.ended = ended
  }

  var state: StreamState { current.withLock { $0 } }

  /// The changes from now on; the latest 64 wait for a consumer that is behind.
  var events: AsyncStream<StreamEvent> { broadcast.subscribe(bufferingPolicy: .bufferingNewest(64)) }

  /// Records a fault of the stream's pipeline: logged and sent; an error ends the stream when
  /// it `ends` it.
  /// - Returns: true when the fault ended the stream (the first error).
  @discardableResult
  func report(_ fault: MediaFault, ends: Bool = true) -> Bool {
    RevueLog.log(fault.severity == .error ? .error : .warning, "Pipeline", "\(name): \(fault)")
    broadcast.send(.fault(fault))
    return ends && fault.severity == .error && change(to: .failed(fault))
  }

  /// The App stopped the stream.
  func stopped() { change(to: .stopped) }

  /// The sender muted or unmuted a received track.
  func muted(_ isMuted: Bool) {
    RevueLog.log(.info, "Receiver", "\(name): \(isMuted ? "muted" : "unmuted") by its sender")
    broadcast.send(.muted(isMuted))
  }

  /// Sends `event`, which changes no state (a reconnection).
  func note(_ event: StreamEvent) {
    RevueLog.log(.info, "Pipeline", "\(name): \(event)")
    broadcast.send(event)
  }

  /// Moves from running to `state`, once; sends the change.
  @discardableResult
  private func change(to state: StreamState) -> Bool {
    let changed = current.withLock { current in
      guard current == .running else { return false }
      current = state
      broadcast.send(.state(state))
      return true
    }
    if changed { ended() }
    return changed
  }
}

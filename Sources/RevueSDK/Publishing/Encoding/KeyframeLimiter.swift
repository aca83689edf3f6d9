import Foundation
import Synchronization

/// Keyframe requests to one encoder shared by several receivers (an RTSP media's clients, a
/// WebRTC broadcast's viewers), at most one every ``RTPSender/keyframeRequestInterval``: the
/// keyframe one asks for is on its way to all of them.
///
/// A receiver's request (its RTCP PLI or FIR) within the interval is dropped. A receiver that
/// starts watching within it may have joined in the middle of that keyframe's packets (receivers
/// that start together do): its request is held to the end of the interval, where the limit
/// lets it through, instead of dropped, one for all that join meanwhile. Dropped, a second
/// viewer that joined 100 ms after the first waited for the encoder's next keyframe (2 s) and
/// decoded 2 frames in its first 2 s.
final class KeyframeLimiter: Sendable {
  private struct State {
    var counted = RTPSender.KeyframeRequests()
    var last: ContinuousClock.Instant?
    /// Whether a joining receiver's request is held for the end of the interval.
    var held = false
  }
  private let state = Mutex(State())
  private let action: @Sendable () -> Void

  /// A limiter that asks for a keyframe with `action`.
  init(_ action: @escaping @Sendable () -> Void) { self.action = action }

  /// The requests so far, and those passed on.
  var counted: RTPSender.KeyframeRequests { state.withLock { $0.counted } }

  /// A receiver's request (PLI, FIR): passed on, unless one was within the interval.
  func request() {
    let now = ContinuousClock.now
    let honoured = state.withLock { state in
      state.counted.received += 1
      if let last = state.last, now - last < RTPSender.keyframeRequestInterval { return false }
      state.last = now
      state.counted.honoured += 1
      return true
    }
    if honoured { action() }
  }

  /// A receiver that starts watching: its request is passed on now, or at the end of the
  /// interval when one was within it.
  func join() {
    let now = ContinuousClock.now
    let interval = RTPSender.keyframeRequestInterval
    let wait: Duration? = state.withLock { state in
      state.counted.received += 1
      guard !state.held else { return nil }
      if let last = state.last, now - last < interval {
        state.held = true
        return interval - (now - last) + .milliseconds(5)
      }
      state.last = now
      state.counted.honoured += 1
      return .zero
    }
    guard let wait else { return }
    if wait == .zero { return action() }
    DispatchQueue.global().asyncAfter(deadline: .now() + Double(wait / .microseconds(1)) / 1e6) { [self] in
      state.withLock { state in
        state.held = false
        state.last = .now
        state.counted.honoured += 1
      }
      action()
    }
  }
}

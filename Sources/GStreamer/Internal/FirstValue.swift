import Synchronization

/// The first value offered, from any thread (a signal, a probe, a timer), for one async waiter;
/// later offers are ignored.
final class FirstValue<T: Sendable>: Sendable {
  private struct State {
    var value: T?
    var settled = false
    var waiter: CheckedContinuation<T, Never>?
  }
  private let state = Mutex(State())

  /// Offers `value`; only the first offer counts.
  func settle(_ value: T) {
    let waiter = state.withLock { state -> CheckedContinuation<T, Never>? in
      guard !state.settled else { return nil }
      (state.value, state.settled) = (value, true)
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: value)
  }

  /// The first value offered, once there is one.
  var value: T {
    get async {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state -> T? in
          if !state.settled { state.waiter = continuation }
          return state.settled ? state.value : nil
        }
        if let ready { continuation.resume(returning: ready) }
      }
    }
  }

  /// Offers `value` after `timeout`, unless something else is offered first.
  func settle(_ value: T, after timeout: Duration) -> Task<Void, Never> {
    Task {
      guard (try? await Task.sleep(for: timeout)) != nil else { return }
      self.settle(value)
    }
  }
}

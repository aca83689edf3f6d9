import Synchronization

/// Hands every value to each of its current subscribers, in order: the SDK's events and log,
/// for code that awaits them instead of using delegates.
final class Broadcast<Value: Sendable>: Sendable {
  private let subscribers = Mutex<(next: UInt64, all: [UInt64: AsyncStream<Value>.Continuation])>((0, [:]))

  /// A stream of the values sent from now on; it ends when the broadcast is finished or the
  /// consumer stops iterating. A consumer that falls behind keeps the latest `keptValues` (256
  /// by default): a stream nobody reads never grows without bound.
  func subscribe(
    bufferingPolicy: AsyncStream<Value>.Continuation.BufferingPolicy = .bufferingNewest(keptValues)
  ) -> AsyncStream<Value> {
    let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: bufferingPolicy)
    let id = subscribers.withLock { state in
      defer { state.next += 1 }
      state.all[state.next] = continuation
      return state.next
    }
    continuation.onTermination = { [weak self] _ in
      let removed = self?.subscribers.withLock { $0.all.removeValue(forKey: id) }
      _ = removed  // released here, outside the lock
    }
    return stream
  }

  /// How many values a subscriber that falls behind keeps, by default.
  static var keptValues: Int { 256 }

  /// Sends a value to every subscriber. Values sent from one thread arrive in that order.
  ///
  /// The subscribers are handed the value outside the lock: handing it may wait for the lock of
  /// the task awaiting it, and a thread cancelling that task holds that lock while its stream
  /// ends, which takes this one (`onTermination`).
  func send(_ value: Value) {
    let all = subscribers.withLock { Array($0.all.values) }
    for continuation in all { continuation.yield(value) }
  }

  /// Ends every subscriber's stream.
  func finish() {
    let all = subscribers.withLock { state in
      defer { state.all.removeAll() }
      return Array(state.all.values)
    }
    for continuation in all { continuation.finish() }
  }

  deinit { finish() }
}

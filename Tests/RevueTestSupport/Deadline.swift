/// A wait that did not finish in time: the test fails with what it was waiting for.
public struct DeadlineExceeded: Error, CustomStringConvertible {
  /// What did not happen.
  public var what: String
  /// How long it was given.
  public var limit: Duration
  /// `what did not happen within limit`.
  public var description: String { "\(what) did not happen within \(limit)" }
}

/// Runs `operation`, which must finish within `limit` (it is cancelled then, and the wait throws
/// ``DeadlineExceeded`` naming `what`). Use it around awaits that could otherwise hang a test.
public func withDeadline<T: Sendable>(
  _ limit: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
  try await withThrowingTaskGroup(of: DeadlineOutcome<T>.self) { group in
    group.addTask { .done(try await operation()) }
    group.addTask {
      try await Task.sleep(for: limit)  // waits-on-purpose: deadline
      return .late
    }
    defer { group.cancelAll() }
    switch try await group.next()! {
    case .done(let value): return value
    case .late: throw DeadlineExceeded(what: what, limit: limit)
    }
  }
}

/// Which of an operation and its deadline came first.
private enum DeadlineOutcome<T: Sendable>: Sendable {
  case done(T)
  case late
}

/// The first `count` elements of `stream` (fewer if it ends), which must arrive within `limit`.
public func collect<Element: Sendable>(
  _ count: Int, of stream: AsyncStream<Element>, within limit: Duration, _ what: String
) async throws -> [Element] {
  try await withDeadline(limit, what) {
    var collected: [Element] = []
    for await element in stream {
      collected.append(element)
      if collected.count == count { break }
    }
    return collected
  }
}

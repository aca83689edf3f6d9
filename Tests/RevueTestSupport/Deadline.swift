import Foundation

/// A wait that did not finish in time: the test fails with what it was waiting for.
public struct DeadlineExceeded: Error, CustomStringConvertible {
  /// What did not happen.
  public var what: String
  /// How long it was given.
  public var limit: Duration
  /// `what did not happen within limit`.
  public var description: String { "\(what) did not happen within \(limit)" }

  /// `what` did not happen within `limit`.
  public init(what: String, limit: Duration) {
    self.what = what
    self.limit = limit
  }
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

/// Runs `body` on a thread of its own and waits up to `limit` for it to return, so that a
/// deadlock fails the test (naming `what`) instead of hanging it.
public func onThread<T: Sendable>(
  within limit: Duration, _ what: String, _ body: @escaping @Sendable () throws -> T
) async throws -> T {
  try await onThreads(1, within: limit, what) { _ in try body() }[0]
}

/// Runs `body(0)`…`body(count - 1)` on `count` threads of their own at once and waits up to
/// `limit` for all of them to return.
/// - Returns: the results, by index.
public func onThreads<T: Sendable>(
  _ count: Int, within limit: Duration, _ what: String, _ body: @escaping @Sendable (Int) throws -> T
) async throws -> [T] {
  let (results, continuation) = AsyncStream.makeStream(of: (Int, Result<T, any Error>).self)
  for index in 0..<count {
    Thread { continuation.yield((index, Result { try body(index) })) }.start()
  }
  let finished = try await collect(count, of: results, within: limit, what)
  guard finished.count == count else { throw DeadlineExceeded(what: what, limit: limit) }
  return try finished.sorted { $0.0 < $1.0 }.map { try $0.1.get() }
}

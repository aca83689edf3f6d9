import Foundation
import Synchronization
import Testing

/// A wait in a test that did not end by its deadline.
public struct DeadlineExceeded: Error, CustomStringConvertible {
  /// What was awaited, for how long, and where.
  public var description: String

  /// A failure that says `description`.
  public init(_ description: String) { self.description = description }
}

/// Runs `body` and returns what it returns, or throws ``DeadlineExceeded`` ("waited 20 s for
/// `what`", with the caller's file and line) when `seconds` pass first.
///
/// At the deadline `body` is cancelled and left behind: the caller does not wait for it, so a
/// body stuck where cancellation cannot reach it (a blocking call, a continuation nobody resumes)
/// fails the test instead of hanging it. Cancelling the caller cancels `body`.
public func withDeadline<T: Sendable>(
  _ seconds: Double, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
  _ body: sending @escaping @isolated(any) () async throws -> T
) async throws -> T {
  let outcome = FirstOutcome<T>()
  let work = Task {
    do {
      outcome.settle(.success(try await body()))
    } catch {
      outcome.settle(.failure(error))
    }
  }
  let timer = Task {
    try await Task.sleep(for: .seconds(seconds))  // waits-on-purpose: deadline
    outcome.settle(
      .failure(DeadlineExceeded("waited \(seconds) s for \(what) (\(sourceLocation.fileName):\(sourceLocation.line))")))
  }
  defer {
    timer.cancel()
    work.cancel()
  }
  return try await withTaskCancellationHandler {
    try await outcome.value
  } onCancel: {
    work.cancel()
  }
}

/// The first of several results offered from different tasks, for one waiter.
final class FirstOutcome<T: Sendable>: Sendable {
  private struct State {
    var result: Result<T, any Error>?
    var waiter: CheckedContinuation<T, any Error>?
  }

  private let state = Mutex(State())

  /// Offers a result; only the first one offered counts.
  func settle(_ result: Result<T, any Error>) {
    let waiter: CheckedContinuation<T, any Error>? = state.withLock { state in
      guard state.result == nil else { return nil }
      state.result = result
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(with: result)
  }

  /// The first result offered, once there is one.
  var value: T {
    get async throws {
      try await withCheckedThrowingContinuation { continuation in
        let ready: Result<T, any Error>? = state.withLock { state in
          if state.result == nil { state.waiter = continuation }
          return state.result
        }
        if let ready { continuation.resume(with: ready) }
      }
    }
  }
}

/// The first `count` elements of `stream` (fewer if it ends), which must arrive within `seconds`.
public func collect<Element: Sendable>(
  _ count: Int, of stream: AsyncStream<Element>, within seconds: Double, _ what: String,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [Element] {
  try await withDeadline(seconds, what, sourceLocation: sourceLocation) {
    var collected: [Element] = []
    for await element in stream {
      collected.append(element)
      if collected.count == count { break }
    }
    return collected
  }
}

/// Runs `body` on a thread of its own and waits up to `seconds` for it to return, so that a
/// deadlock fails the test (naming `what`) instead of hanging it.
public func onThread<T: Sendable>(
  within seconds: Double, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
  _ body: @escaping @Sendable () throws -> T
) async throws -> T {
  try await onThreads(1, within: seconds, what, sourceLocation: sourceLocation) { _ in try body() }[0]
}

/// Runs `body(0)`…`body(count - 1)` on `count` threads of their own at once and waits up to
/// `seconds` for all of them to return.
/// - Returns: the results, by index.
public func onThreads<T: Sendable>(
  _ count: Int, within seconds: Double, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
  _ body: @escaping @Sendable (Int) throws -> T
) async throws -> [T] {
  let (results, continuation) = AsyncStream.makeStream(of: (Int, Result<T, any Error>).self)
  for index in 0..<count {
    Thread { continuation.yield((index, Result { try body(index) })) }.start()
  }
  let finished = try await collect(count, of: results, within: seconds, what, sourceLocation: sourceLocation)
  guard finished.count == count else { throw DeadlineExceeded("\(what): \(finished.count) of \(count) threads") }
  return try finished.sorted { $0.0 < $1.0 }.map { try $0.1.get() }
}

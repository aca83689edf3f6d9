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

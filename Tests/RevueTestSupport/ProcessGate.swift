import Foundation
import Synchronization
import Testing

/// Who runs beside whom in the test process, for `swift test` run in parallel.
///
/// Every suite carries ``Trait/sharedProcess``: its tests run beside one another. A test (or
/// suite) that needs the process to itself carries ``Trait/wholeProcess``: it starts once the
/// tests running have ended, and no other starts until it ends. The lifetime tests need that
/// (they count the GStreamer objects and threads of the whole process), and so do tests that
/// depend on every camera the process has (picking one by position, or none at all).
///
/// Those that share the process run first, a few at a time (``ReadersWriterGate``), then those
/// that need it alone. A `.serialized` suite runs its tests in the order they are written, so
/// one that needs the process alone goes last in its suite: the tests after it would wait with
/// it, and then run one at a time beside nothing.
///
/// Before a test starts, the trait prepares GStreamer (``TestEnvironment/prepare()``), so the
/// leaks tracer is on whichever test comes first. The wait for the process happens outside the
/// test's time limit. Once a test case's time limit has cancelled it, it has
/// ``ProcessGate/graceAfterCancel`` seconds to end; then the process ends with a message naming
/// it, so a test stuck where cancellation cannot reach it fails the run instead of hanging it.
public struct ProcessGate: TestTrait, SuiteTrait, TestScoping {
  /// Whether tests run beside others, or alone.
  public enum Mode: Sendable { case shared, exclusive }

  /// Whether the tests it covers run beside others, or alone.
  public let mode: Mode
  private let id = UUID()

  /// Seconds a cancelled test case has to end before the process is ended.
  public static let graceAfterCancel = 10.0

  /// A suite's gate covers its tests and nested suites.
  public var isRecursive: Bool { true }

  /// The gate that acts for a test function and each of its cases (none for suites).
  public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
    // A test can inherit several gates: the one that acts is its first exclusive one, else its last.
    let gates = test.traits.compactMap { $0 as? ProcessGate }
    guard !test.isSuite, (gates.first { $0.mode == .exclusive } ?? gates.last)?.id == id else { return nil }
    return self
  }

  /// Waits for the process (for a test function), or watches that a cancelled case ends (for a
  /// test case).
  public func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    if testCase != nil {
      try await Self.endWithinGrace(test, function)
    } else {
      TestEnvironment.prepare()
      await Self.gate.enter(mode)
      defer { Self.gate.leave(mode) }
      // The tests that run alone run one after another, after all the others: their own times
      // add up to that part of the suite's, which the log says test by test.
      let start = ContinuousClock.now
      defer {
        if mode == .exclusive {
          let seconds = Double((ContinuousClock.now - start) / .milliseconds(1)) / 1000
          print("alone in the process: \(test.name) took \(String(format: "%.1f", seconds)) s")
        }
      }
      try await function()
    }
  }

  private static let gate = ReadersWriterGate()

  /// Runs a test case; once it is cancelled, gives it ``graceAfterCancel`` seconds to end, then
  /// ends the process with a message naming it.
  private static func endWithinGrace(_ test: Test, _ function: @Sendable () async throws -> Void) async throws {
    let watchdog = Watchdog()
    defer { watchdog.disarm() }
    try await withTaskCancellationHandler {
      try await function()
    } onCancel: {
      watchdog.arm(
        after: graceAfterCancel,
        "\(test.name) (\(test.sourceLocation)) did not end within \(graceAfterCancel) s of being cancelled by its"
          + " time limit: it waits where cancellation cannot reach it")
    }
  }
}

/// Ends the process with a message unless disarmed in time.
private final class Watchdog: Sendable {
  private enum State {
    case running
    case armed(Task<Void, Never>)
    case done
  }

  private let state = Mutex(State.running)

  func arm(after seconds: Double, _ message: String) {
    state.withLock { state in
      guard case .running = state else { return }
      state = .armed(
        Task.detached {
          guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }  // waits-on-purpose: deadline
          FileHandle.standardError.write(Data("\n\(message)\n".utf8))
          fatalError(message)
        })
    }
  }

  func disarm() {
    state.withLock { state in
      if case .armed(let task) = state { task.cancel() }
      state = .done
    }
  }
}

extension Trait where Self == ProcessGate {
  /// Tests that run beside other tests of this process.
  public static var sharedProcess: Self { ProcessGate(mode: .shared) }
  /// Tests that need this process to themselves.
  public static var wholeProcess: Self { ProcessGate(mode: .exclusive) }
}

/// A readers–writer lock for tasks that puts readers first: up to ``maxReaders`` readers run at
/// once, and a writer waits until no reader runs or waits. So `swift test` runs the tests that
/// share the process together, a few at a time, and then the tests that need it alone, one after
/// another.
///
/// First come first served (a writer waits for the readers before it, and readers after a
/// waiting writer wait for it) ran the suite nearly one test at a time: about 50 writers were
/// queued from the start, between every two of them the readers that had come in the gap
/// drained one by one, and one long reader (the minute's soak) held every writer behind it.
/// 448 s, with one to three tests running at a time.
final class ReadersWriterGate: Sendable {
  /// Readers at once: two cores, and tests that mostly wait on real time (frames at 30 a second,
  /// child processes, links with delay). Six: 338–342 s for the suite on 2026-12-07, four
  /// 351–366 s.
  static let maxReaders = 6

  private let queue = Mutex(GateQueue<CheckedContinuation<Void, Never>>(maxReaders: maxReaders))

  func enter(_ mode: ProcessGate.Mode) async {
    await withCheckedContinuation { continuation in
      for admitted in queue.withLock({ $0.arrive(mode, continuation) }) { admitted.resume() }
    }
  }

  func leave(_ mode: ProcessGate.Mode) {
    for admitted in queue.withLock({ $0.leave(mode) }) { admitted.resume() }
  }
}

/// ``ReadersWriterGate``'s rule, apart from the tasks it lets in: who waits, who runs, and
/// whom each arrival and departure lets in.
struct GateQueue<Waiter> {
  /// Readers that may run at once.
  let maxReaders: Int
  private(set) var readers = 0
  private(set) var writer = false
  private var waitingReaders: [Waiter] = []
  private var waitingWriters: [Waiter] = []

  /// A gate that lets `maxReaders` readers run at once.
  init(maxReaders: Int) { self.maxReaders = maxReaders }

  /// `waiter` arrives to run as `mode`; returns whom to let in now (it, or no one).
  mutating func arrive(_ mode: ProcessGate.Mode, _ waiter: Waiter) -> [Waiter] {
    if mode == .shared { waitingReaders.append(waiter) } else { waitingWriters.append(waiter) }
    return admit()
  }

  /// One that ran as `mode` leaves; returns whom to let in now.
  mutating func leave(_ mode: ProcessGate.Mode) -> [Waiter] {
    if mode == .shared { readers -= 1 } else { writer = false }
    return admit()
  }

  /// Readers first, up to the limit, in the order they came; a writer when no reader runs or
  /// waits.
  private mutating func admit() -> [Waiter] {
    var admitted: [Waiter] = []
    while !writer, readers < maxReaders, !waitingReaders.isEmpty {
      readers += 1
      admitted.append(waitingReaders.removeFirst())
    }
    if !writer, readers == 0, waitingReaders.isEmpty, !waitingWriters.isEmpty {
      writer = true
      admitted.append(waitingWriters.removeFirst())
    }
    return admitted
  }
}

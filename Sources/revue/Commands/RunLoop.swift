import Dispatch
import Foundation
import RevueCommandLine
import Synchronization

/// Runs until Ctrl-C or SIGTERM, a duration, or a condition, calling a status callback every second.
///
/// The loop runs on a thread of its own that sleeps between checks, not on the cooperative pool
/// with `Task.sleep`: on Linux each `Task.sleep` is a `dispatch_after` whose continuation
/// libdispatch allocates on its timer thread and frees into a cache of the worker thread that
/// ran it, up to 1024 a thread. Polling 20 times a second, `revue stream` and `revue receive`
/// grew by 1.5 KiB/s for their first two minutes (to about 160 KiB, two workers' caches full).
/// A thread that sleeps allocates nothing.
enum RunLoopControl {
  /// How often the stop conditions are checked.
  static let pollInterval: UInt32 = 50_000  // µs

  /// Calls `status` once a second until `duration` seconds passed (forever when nil), Ctrl-C or
  /// SIGTERM came, or `done` returns true. `done` and `status` run on the loop's thread. A command
  /// that says it is ready before it calls this passes a `stopped` flag made before it says so, so
  /// that a Ctrl-C right after still ends the loop instead of the process.
  static func run(
    duration: Int?, stopped: SignalFlag = SignalFlag(), done: @escaping @Sendable () -> Bool = { false },
    status: @escaping @Sendable () -> Void
  ) async {
    defer { stopped.cancel() }
    await onThread {
      let start = monotonicNanoseconds()
      let end = duration.map { start + UInt64($0) * 1_000_000_000 }
      var nextStatus = start + 1_000_000_000
      while !stopped.isSet && !done() {
        if let end, monotonicNanoseconds() >= end { break }
        usleep(pollInterval)
        if monotonicNanoseconds() >= nextStatus {
          status()
          nextStatus += 1_000_000_000
        }
      }
    }
  }
}

/// The frames counted at the previous status line, for the rate since then (status lines are
/// printed on the run loop's thread).
final class PreviousCount: Sendable {
  private let count = Mutex(0)

  /// How many more than last time `count` is; remembers `count`.
  func advance(to count: Int) -> Int {
    self.count.withLock { previous in
      defer { previous = count }
      return count - previous
    }
  }
}

/// Set when SIGINT or SIGTERM arrives (the default handlers are off meanwhile).
final class SignalFlag: @unchecked Sendable {
  // Safety: the sources and flag are touched on their own serial queue only; isSet reads under it.
  private let queue = DispatchQueue(label: "revue.signals")
  private var sources: [DispatchSourceSignal] = []
  private var flag = false

  init() {
    for number in [SIGINT, SIGTERM] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler { [unowned self] in self.flag = true }
      source.resume()
      sources.append(source)
    }
  }

  var isSet: Bool { queue.sync { flag } }

  func cancel() {
    queue.sync { for source in sources { source.cancel() } }
  }
}

import Foundation
import Glibc

/// Now on the monotonic clock (`CLOCK_MONOTONIC`, GStreamer's system clock, shared by every
/// process of the machine), in nanoseconds.
public func monotonicNanoseconds() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Runs `body` on a thread of its own (blocking reads, writes, waits and sleeps: none of them
/// on a thread of Swift's concurrency pool), and returns its result.
public func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
  await withCheckedContinuation { continuation in
    Thread { continuation.resume(returning: body()) }.start()
  }
}

import Foundation
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// ``Broadcast``, which carries every capturer's, track's and room's events.
@Suite(.tier(.pipeline), .sharedProcess) struct BroadcastTests {
  /// CI hung here (stop 22): a capturer sent an event while a track cancelled the task awaiting
  /// that capturer's events. Cancelling holds the task's lock and ends its stream, which takes
  /// the broadcast's lock; sending held the broadcast's lock and resumed the task, which takes
  /// the task's lock. Each thread waited for the other forever.
  @Test func cancellingASubscriberWhileValuesAreSentNeverDeadlocks() async throws {
    let broadcast = Broadcast<Int>()
    let done = Atomic(false)
    let rounds = 2000
    _ = try await onThreads(2, within: 30, "\(rounds) subscribers cancelled while values are sent") { index in
      if index == 0 {
        var value = 0
        while !done.load(ordering: .relaxed) {
          broadcast.send(value)
          value &+= 1
        }
        return
      }
      defer { done.store(true, ordering: .relaxed) }
      for _ in 0..<rounds {
        let received = DispatchSemaphore(value: 0)
        let events = broadcast.subscribe()
        let subscriber = Task {
          for await _ in events { received.signal() }
        }
        received.wait()
        subscriber.cancel()
      }
    }
  }

  @Test func valuesSentFromOneThreadArriveInOrderToEverySubscriber() async throws {
    let broadcast = Broadcast<Int>()
    let first = broadcast.subscribe()
    let second = broadcast.subscribe()
    try await onThread(within: 10, "sending 100 values") { for value in 0..<100 { broadcast.send(value) } }
    broadcast.finish()
    #expect(try await collect(1000, of: first, within: 10, "the first subscriber's values") == Array(0..<100))
    #expect(try await collect(1000, of: second, within: 10, "the second subscriber's values") == Array(0..<100))
  }
}

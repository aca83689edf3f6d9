import Foundation
import Synchronization

/// The switch between a capturer and its track's renderers and publications: closed, it holds
/// back what the device still delivers while it stops, from the moment ``close()`` returns.
final class DeliveryGate: Sendable {
  private let closed = Atomic(false)
  /// Deliveries between their look at the gate and their end.
  private let passing = Atomic(0)

  /// Runs `deliver` with whether the gate is open, counted as passing until it returns.
  func pass(_ deliver: (_ isOpen: Bool) -> Void) {
    passing.wrappingAdd(1, ordering: .sequentiallyConsistent)
    defer { passing.wrappingSubtract(1, ordering: .sequentiallyConsistent) }
    deliver(!closed.load(ordering: .sequentiallyConsistent))
  }

  /// Opens the gate.
  func open() { closed.store(false, ordering: .sequentiallyConsistent) }

  /// Whether the gate is open.
  var isOpen: Bool { !closed.load(ordering: .sequentiallyConsistent) }

  /// Closes the gate, then waits for a delivery that passed it to finish (at most 100 ms), so
  /// that nothing from before reaches a renderer once it returns.
  func close() {
    closed.store(true, ordering: .sequentiallyConsistent)
    let deadline = ContinuousClock.now + .milliseconds(100)
    while passing.load(ordering: .sequentiallyConsistent) > 0 && ContinuousClock.now < deadline { sched_yield() }
  }
}

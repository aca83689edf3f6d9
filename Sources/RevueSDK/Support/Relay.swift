import Synchronization

/// A weak reference, set once, from a receiver's callback to the track made after it.
final class Relay<Target: AnyObject & Sendable>: @unchecked Sendable {
  // Safety: `target` is read and written under the lock only.
  private let lock = Mutex<Void>(())
  private weak var stored: Target?
  var target: Target? {
    get { lock.withLock { _ in stored } }
    set { lock.withLock { _ in stored = newValue } }
  }
}

import Synchronization

/// Delegates held weakly, called in the order they were added.
public final class MulticastDelegate<Delegate>: Sendable {
  /// A weak reference to a delegate.
  // Safety: the reference is only followed to call the delegate on the main actor.
  private final class WeakBox: @unchecked Sendable {
    weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
  }

  private let boxes = Mutex<[WeakBox]>([])

  init() {}

  /// Adds a delegate, held weakly; adding one twice has no effect.
  public func add(delegate: Delegate) {
    let object = delegate as AnyObject
    boxes.withLock { boxes in
      boxes.removeAll { $0.object == nil }
      if !boxes.contains(where: { $0.object === object }) { boxes.append(WeakBox(object)) }
    }
  }

  /// Removes a delegate.
  public func remove(delegate: Delegate) {
    let object = delegate as AnyObject
    boxes.withLock { $0.removeAll { $0.object == nil || $0.object === object } }
  }

  /// Removes every delegate.
  public func removeAll() { boxes.withLock { $0.removeAll() } }

  /// The delegates still alive, in order.
  var all: [Delegate] { boxes.withLock { $0.compactMap { $0.object as? Delegate } } }
}

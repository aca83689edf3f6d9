internal import CGStreamer
import Synchronization

/// Delivers a bus's messages to Swift subscribers from GStreamer's sync handler, and remembers
/// the errors posted, so that a failed state change can say why.
///
/// One dispatcher belongs to one `GstBus` (attached as object data), whatever the number of
/// Swift wrappers of the bus.
final class BusDispatcher: Sendable {
  private struct Subscriber {
    var types: Message.Types
    var deliver: @Sendable (Message) -> Void
    var end: @Sendable () -> Void
  }

  private struct State {
    var subscribers: [UInt64: Subscriber] = [:]
    var nextID: UInt64 = 0
    /// Errors posted recently, with a running count, for ``firstError(since:)``.
    var errors: [(serial: UInt64, error: BusError)] = []
    var errorCount: UInt64 = 0
  }

  private let state = Mutex(State())
  /// The bus this dispatcher serves, not retained: the bus owns the dispatcher.
  // Safety: only used while the bus is alive (the dispatcher dies with it), and GstBus is thread-safe.
  private nonisolated(unsafe) let busPointer: UnsafeMutablePointer<GstBus>

  private init(bus: UnsafeMutablePointer<GstBus>) { busPointer = bus }

  /// How many recent errors are kept for state-change reports.
  private static let keptErrors = 8

  private static let quark = g_quark_from_static_string("revue-bus-dispatcher")
  /// Serializes attaching, so that one bus never gets two dispatchers.
  private static let attachLock = Mutex(())

  /// The dispatcher of `bus`, installing one if it has none yet.
  @discardableResult
  static func attach(to bus: UnsafeMutablePointer<GstBus>) -> BusDispatcher {
    attachLock.withLock { _ in
      if let existing = existing(on: bus) { return existing }
      let dispatcher = BusDispatcher(bus: bus)
      // The bus's object data owns the dispatcher and ends its streams when the bus is finalized;
      // the sync handler borrows it, as the bus cannot post once finalized.
      g_object_set_qdata_full(
        UnsafeMutableRawPointer(bus).assumingMemoryBound(to: GObject.self), quark,
        Unmanaged.passRetained(dispatcher).toOpaque(), Trampolines.releaseBusDispatcher)
      gst_bus_set_sync_handler(bus, Trampolines.busSyncHandler, Unmanaged.passUnretained(dispatcher).toOpaque(), nil)
      return dispatcher
    }
  }

  /// The dispatcher already attached to `bus`, if any.
  static func existing(on bus: UnsafeMutablePointer<GstBus>) -> BusDispatcher? {
    g_object_get_qdata(UnsafeMutableRawPointer(bus).assumingMemoryBound(to: GObject.self), quark).map {
      Unmanaged<BusDispatcher>.fromOpaque($0).takeUnretainedValue()
    }
  }

  /// Ends every subscription: the bus is going away.
  func finish() {
    let subscribers = state.withLock { state in
      defer { state.subscribers.removeAll() }
      return Array(state.subscribers.values)
    }
    for subscriber in subscribers { subscriber.end() }
  }

  /// Adds a subscriber; messages queued on the bus while nobody listened are delivered to it first.
  func subscribe(
    _ types: Message.Types, _ deliver: @escaping @Sendable (Message) -> Void, onEnd end: @escaping @Sendable () -> Void
  ) -> UInt64 {
    state.withLock { state in
      let id = state.nextID
      state.nextID += 1
      state.subscribers[id] = Subscriber(types: types, deliver: deliver, end: end)
      if state.subscribers.count == 1 {
        while let queued = gst_bus_pop(busPointer) {
          let message = Message(adopting: queued)
          if types.contains(message.type) { deliver(message) }
        }
      }
      return id
    }
  }

  /// Removes a subscriber; nothing happens if it is already gone.
  func unsubscribe(_ id: UInt64) {
    _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
  }

  /// Called by the sync handler on the posting thread.
  /// - Returns: whether the message was delivered (then it is dropped from the bus) or must stay queued.
  func dispatch(_ pointer: UnsafeMutablePointer<GstMessage>) -> Bool {
    let message = Message(retaining: pointer)
    let isError = pointer.pointee.type == GST_MESSAGE_ERROR
    let error: BusError? = if isError, case .error(let parsed) = message.kind { parsed } else { nil }
    let targets: [Subscriber]? = state.withLock { state in
      if let error {
        state.errorCount += 1
        state.errors.append((state.errorCount, error))
        if state.errors.count > Self.keptErrors { state.errors.removeFirst() }
      }
      return state.subscribers.isEmpty ? nil : Array(state.subscribers.values)
    }
    guard let targets else { return false }
    for target in targets where target.types.contains(message.type) { target.deliver(message) }
    return true
  }

  /// A mark for ``firstError(since:)``.
  func mark() -> UInt64 { state.withLock { $0.errorCount } }

  /// The first error posted after `mark`, if any.
  func firstError(since mark: UInt64?) -> BusError? {
    state.withLock { state in state.errors.first { $0.serial > (mark ?? 0) }?.error }
  }

  /// The latest error posted, if any.
  var lastError: BusError? { state.withLock { $0.errors.last?.error } }
}

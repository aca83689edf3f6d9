internal import CGStreamer
import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Delivers a bus's messages to Swift subscribers from GStreamer's sync handler, keeps a bounded
/// backlog of the messages posted while nobody subscribes, remembers the errors posted (so that a
/// failed state change can say why) and knows the pipeline's streaming threads.
///
/// Every message is dropped from the `GstBus` in the sync handler: nothing ever queues there.
/// Subscribers' code always runs outside the dispatcher's lock, so it may subscribe, unsubscribe,
/// post or change the pipeline's state. A message reaches the subscribers registered when it is
/// posted, on the posting thread; with none registered, it goes to the backlog, which the first
/// subscriber is handed (in order, before any later message) when it subscribes.
///
/// One dispatcher belongs to one `GstBus` (attached as object data), whatever the number of
/// Swift wrappers of the bus.
final class BusDispatcher: Sendable {
  private struct Subscriber {
    var types: Message.Types
    var deliver: @Sendable (Message) -> Void
    var end: @Sendable () -> Void
    /// Messages held back while the subscriber is handed the backlog, so that they come after it;
    /// nil once it is handed messages directly.
    var held: [Message]?
  }

  private struct State {
    var subscribers: [UInt64: Subscriber] = [:]
    var nextID: UInt64 = 0
    /// Messages posted while nobody subscribed, oldest first, at most ``backlogLimit``.
    var backlog: [Message] = []
    /// Threads waiting in ``pop(_:timeout:)`` for a message to reach the backlog.
    var popWaiters: [DispatchSemaphore] = []
    /// Errors posted recently, with a running count, for ``firstError(since:)``.
    var errors: [(serial: UInt64, error: BusError)] = []
    var errorCount: UInt64 = 0
    /// The streaming threads running now (between their STREAM_STATUS enter and leave messages),
    /// with the number of tasks each runs.
    var streamingThreads: [pthread_t: Int] = [:]
  }

  private let state = Mutex(State())
  /// The bus this dispatcher serves, not retained: the bus owns the dispatcher.
  // Safety: only used while the bus is alive (the dispatcher dies with it), and GstBus is thread-safe.
  private nonisolated(unsafe) let busPointer: UnsafeMutablePointer<GstBus>

  private init(bus: UnsafeMutablePointer<GstBus>) { busPointer = bus }

  /// The most messages kept for the first subscriber while nobody subscribes; older ones are dropped.
  static let backlogLimit = 64

  /// How many recent errors are kept for state-change reports.
  private static let keptErrors = 8

  private static let quark = g_quark_from_static_string("revue-bus-dispatcher")
  /// Serializes attaching, so that one bus never gets two dispatchers.
  private static let attachLock = Mutex(())

  // MARK: - Attaching

  /// The dispatcher of `bus`, installing one if it has none yet. Messages already queued on the
  /// bus move to the backlog.
  @discardableResult
  static func attach(to bus: UnsafeMutablePointer<GstBus>) -> BusDispatcher {
    if let existing = existing(on: bus) { return existing }
    return attachLock.withLock { _ in
      if let existing = existing(on: bus) { return existing }
      let dispatcher = BusDispatcher(bus: bus)
      // The bus's object data owns the dispatcher and ends its streams when the bus is finalized;
      // the sync handler borrows it, as the bus cannot post once finalized.
      g_object_set_qdata_full(
        UnsafeMutableRawPointer(bus).assumingMemoryBound(to: GObject.self), quark,
        Unmanaged.passRetained(dispatcher).toOpaque(), Trampolines.releaseBusDispatcher)
      dispatcher.installSyncHandler()
      return dispatcher
    }
  }

  /// Installs the sync handler and moves the messages queued before it into the backlog. Holding
  /// the lock meanwhile makes messages that reach the new handler wait until the older ones are in.
  private func installSyncHandler() {
    let dropped: [Message] = state.withLock { state in
      gst_bus_set_sync_handler(busPointer, Trampolines.busSyncHandler, Unmanaged.passUnretained(self).toOpaque(), nil)
      while let queued = gst_bus_pop(busPointer) { state.backlog.append(Message(adopting: queued)) }
      let excess = max(0, state.backlog.count - Self.backlogLimit)
      defer { state.backlog.removeFirst(excess) }
      return Array(state.backlog.prefix(excess))
    }
    _ = dropped  // released here, outside the lock
  }

  /// The dispatcher already attached to `bus`, if any.
  static func existing(on bus: UnsafeMutablePointer<GstBus>) -> BusDispatcher? {
    g_object_get_qdata(UnsafeMutableRawPointer(bus).assumingMemoryBound(to: GObject.self), quark).map {
      Unmanaged<BusDispatcher>.fromOpaque($0).takeUnretainedValue()
    }
  }

  /// Ends every subscription and empties the backlog: the bus is going away.
  func finish() {
    let (subscribers, backlog) = state.withLock { state in
      defer {
        state.subscribers.removeAll()
        state.backlog.removeAll()
      }
      return (Array(state.subscribers.values), state.backlog)
    }
    for subscriber in subscribers { subscriber.end() }
    _ = backlog  // released here, outside the lock
  }

  /// Forgets the backlog and the streaming threads: the pipeline has stopped (state NULL), as
  /// GStreamer flushes a stopped pipeline's bus. Keeps the backlog from holding the pipeline
  /// alive through messages it posted.
  func pipelineStopped() {
    let backlog = state.withLock { state in
      state.streamingThreads.removeAll()
      defer { state.backlog.removeAll() }
      return state.backlog
    }
    _ = backlog  // released here, outside the lock
  }

  // MARK: - Subscribers

  /// Adds a subscriber. The first subscriber is handed the backlog (those of `types`), on the
  /// calling thread and before this returns, followed by the messages posted meanwhile.
  /// - Returns: the subscriber's id, for ``unsubscribe(_:)``.
  func subscribe(
    _ types: Message.Types, _ deliver: @escaping @Sendable (Message) -> Void, onEnd end: @escaping @Sendable () -> Void
  ) -> UInt64 {
    let (id, backlog) = state.withLock { state in
      let id = state.nextID
      state.nextID += 1
      var subscriber = Subscriber(types: types, deliver: deliver, end: end, held: nil)
      var backlog: [Message] = []
      if state.subscribers.isEmpty && !state.backlog.isEmpty {
        swap(&backlog, &state.backlog)
        subscriber.held = []
      }
      state.subscribers[id] = subscriber
      return (id, backlog)
    }
    guard !backlog.isEmpty else { return id }
    var batch = backlog.filter { types.contains($0.type) }
    repeat {
      for message in batch { deliver(message) }
      // What was posted while the batch went out; once nothing was, later messages go directly.
      batch = state.withLock { state in
        let held = state.subscribers[id]?.held ?? []
        state.subscribers[id]?.held = held.isEmpty ? nil : []
        return held
      }
    } while !batch.isEmpty
    return id
  }

  /// Removes a subscriber; nothing happens if it is already gone. A delivery already under way on
  /// another thread may still reach it.
  func unsubscribe(_ id: UInt64) {
    let removed = state.withLock { $0.subscribers.removeValue(forKey: id) }
    _ = removed  // released here, outside the lock
  }

  // MARK: - Messages

  /// Called by the sync handler on the posting thread, with the message's reference (the handler
  /// drops every message from the bus).
  func dispatch(adopting pointer: UnsafeMutablePointer<GstMessage>) {
    let message = Message(adopting: pointer)
    let type = message.type
    let error: BusError? = if type == .error, case .error(let parsed) = message.kind { parsed } else { nil }
    let threadChange = Self.streamingThreadChange(pointer)
    let thread = pthread_self()
    var dropped: Message?
    var waiters: [DispatchSemaphore] = []
    let targets: [@Sendable (Message) -> Void] = state.withLock { state in
      if let error {
        state.errorCount += 1
        state.errors.append((state.errorCount, error))
        if state.errors.count > Self.keptErrors { state.errors.removeFirst() }
      }
      if threadChange != 0 {
        let count = state.streamingThreads[thread, default: 0] + threadChange
        state.streamingThreads[thread] = count > 0 ? count : nil
      }
      if state.subscribers.isEmpty {
        state.backlog.append(message)
        if state.backlog.count > Self.backlogLimit { dropped = state.backlog.removeFirst() }
        swap(&waiters, &state.popWaiters)
        return []
      }
      var targets: [@Sendable (Message) -> Void] = []
      for (id, subscriber) in state.subscribers where subscriber.types.contains(type) {
        if subscriber.held != nil {
          state.subscribers[id]?.held?.append(message)
        } else {
          targets.append(subscriber.deliver)
        }
      }
      return targets
    }
    _ = dropped  // released here, outside the lock
    for waiter in waiters { waiter.signal() }
    for deliver in targets { deliver(message) }
  }

  /// +1 when `message` says that the posting thread starts running a streaming task, -1 when it
  /// says that it stops, else 0. GStreamer posts both from the streaming thread itself.
  private static func streamingThreadChange(_ message: UnsafeMutablePointer<GstMessage>) -> Int {
    guard message.pointee.type == GST_MESSAGE_STREAM_STATUS else { return 0 }
    var status = GST_STREAM_STATUS_TYPE_CREATE
    var owner: UnsafeMutablePointer<GstElement>?
    gst_message_parse_stream_status(message, &status, &owner)
    switch status {
    case GST_STREAM_STATUS_TYPE_ENTER: return 1
    case GST_STREAM_STATUS_TYPE_LEAVE: return -1
    default: return 0
    }
  }

  /// Whether the calling thread runs one of the pipeline's streaming tasks now.
  var isStreamingThread: Bool {
    let thread = pthread_self()
    return state.withLock { $0.streamingThreads[thread] != nil }
  }

  /// Takes the oldest backlog message of `types`, waiting up to `timeout` for one to be posted.
  func pop(_ types: Message.Types, timeout: Duration) -> Message? {
    let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: ClockTime(timeout).nanoseconds))
    let wakeUp = DispatchSemaphore(value: 0)
    while true {
      let found: Message? = state.withLock { state in
        if let index = state.backlog.firstIndex(where: { types.contains($0.type) }) {
          return state.backlog.remove(at: index)
        }
        state.popWaiters.append(wakeUp)
        return nil
      }
      if let found { return found }
      if wakeUp.wait(timeout: deadline) == .timedOut {
        return state.withLock { state in
          state.popWaiters.removeAll { $0 === wakeUp }
          return state.backlog.firstIndex { types.contains($0.type) }.map { state.backlog.remove(at: $0) }
        }
      }
    }
  }

  // MARK: - Errors

  /// A mark for ``firstError(since:)``.
  func mark() -> UInt64 { state.withLock { $0.errorCount } }

  /// The first error posted after `mark`, if any.
  func firstError(since mark: UInt64?) -> BusError? {
    state.withLock { state in state.errors.first { $0.serial > (mark ?? 0) }?.error }
  }

  /// The latest error posted, if any.
  var lastError: BusError? { state.withLock { $0.errors.last?.error } }
}

internal import CGStreamer

/// A pipeline's (or device monitor's) message bus, read without a GLib main loop.
///
/// Messages reach Swift from the thread that posts them, through GStreamer's sync handler:
/// as ``messages(_:bufferingPolicy:)`` streams for async code, and through
/// ``addSyncHandler(_:)`` callbacks for code that must act on the posting thread.
/// While nobody listens, messages stay queued on the bus and the first listener gets them.
/// The corresponding C type is `GstBus`.
public final class Bus: Object, @unchecked Sendable {
  var busPointer: UnsafeMutablePointer<GstBus> { rawPointer.assumingMemoryBound(to: GstBus.self) }

  private var dispatcher: BusDispatcher { BusDispatcher.attach(to: busPointer) }

  /// The bus's messages of `types`, in posting order, as they are posted.
  ///
  /// The stream ends when the bus is destroyed (with its pipeline) or the consumer stops iterating.
  /// - Parameters:
  ///   - types: the kinds to receive; every kind by default.
  ///   - bufferingPolicy: what the stream keeps while the consumer is behind.
  public func messages(
    _ types: Message.Types = .all,
    bufferingPolicy: AsyncStream<Message>.Continuation.BufferingPolicy = .unbounded
  ) -> AsyncStream<Message> {
    let (stream, continuation) = AsyncStream.makeStream(of: Message.self, bufferingPolicy: bufferingPolicy)
    let dispatcher = self.dispatcher
    let token = dispatcher.subscribe(types) {
      continuation.yield($0)
    } onEnd: {
      continuation.finish()
    }
    continuation.onTermination = { [weak dispatcher] _ in dispatcher?.unsubscribe(token) }
    return stream
  }

  /// Calls `handler` on the posting thread for every message, until the token is removed.
  ///
  /// The handler must return quickly and must not call back into this bus's subscriptions.
  /// - Returns: a token for ``removeSyncHandler(_:)``.
  @discardableResult
  public func addSyncHandler(_ handler: @escaping @Sendable (Message) -> Void) -> SubscriptionToken {
    SubscriptionToken(id: dispatcher.subscribe(.all, handler) {})
  }

  /// Stops calling a handler added with ``addSyncHandler(_:)``.
  public func removeSyncHandler(_ token: SubscriptionToken) { dispatcher.unsubscribe(token.id) }

  /// Identifies a handler added with ``addSyncHandler(_:)``.
  public struct SubscriptionToken: Sendable, Hashable {
    let id: UInt64
  }

  /// Posts a message, as an element would.
  ///
  /// The corresponding C function is `gst_bus_post`.
  /// - Returns: false when the bus is flushing (its pipeline is stopped).
  @discardableResult
  public func post(_ message: Message) -> Bool {
    gst_bus_post(busPointer, gst_message_ref(message.pointer)) != 0
  }

  /// Waits up to `timeout` for a queued message of `types` and removes it from the bus.
  /// Only messages that no subscriber took are queued.
  ///
  /// The corresponding C function is `gst_bus_timed_pop_filtered`.
  public func pop(_ types: Message.Types = .all, timeout: Duration = .zero) -> Message? {
    gst_bus_timed_pop_filtered(
      busPointer, ClockTime(timeout).rawValue, GstMessageType(rawValue: Int32(bitPattern: types.rawValue))
    )
    .map { Message(adopting: $0) }
  }
}

internal import CGStreamer

/// A pipeline's (or device monitor's) message bus, read without a GLib main loop.
///
/// Messages reach Swift from the thread that posts them, through GStreamer's sync handler:
/// as ``messages(_:bufferingPolicy:)`` streams for async code, and through
/// ``addSyncHandler(_:)`` callbacks for code that must act on the posting thread. No message
/// stays queued on the `GstBus`: each goes to the subscribers (streams and sync handlers)
/// registered when it is posted. While there are none, the latest ``backlogLimit`` messages
/// are kept in a backlog, which the first subscriber is handed; stopping the pipeline empties it.
/// The corresponding C type is `GstBus`.
public final class Bus: Object, @unchecked Sendable {
  var busPointer: UnsafeMutablePointer<GstBus> { rawPointer.assumingMemoryBound(to: GstBus.self) }

  private var dispatcher: BusDispatcher { BusDispatcher.attach(to: busPointer) }

  /// The most messages a bus keeps while nobody subscribes (64); older ones are dropped.
  public static let backlogLimit = BusDispatcher.backlogLimit

  /// How many messages a ``messages(_:bufferingPolicy:)`` stream keeps by default while its
  /// consumer is behind (256, the newest): a burst of state changes from a large pipeline fits,
  /// and a stream nobody reads does not grow.
  public static let defaultBufferingLimit = 256

  /// The bus's messages of `types`, in posting order (for each posting thread), as they are posted.
  ///
  /// A first subscriber (no other stream or sync handler yet) first gets the backlog's messages
  /// of `types`, in order; the others in the backlog are dropped.
  /// The stream ends when the bus is destroyed (with its pipeline) or the consumer stops iterating.
  /// - Parameters:
  ///   - types: the kinds to receive; every kind by default.
  ///   - bufferingPolicy: what the stream keeps while the consumer is behind; the newest
  ///     ``defaultBufferingLimit`` (256) messages by default, older ones being dropped.
  public func messages(
    _ types: Message.Types = .all,
    bufferingPolicy: AsyncStream<Message>.Continuation.BufferingPolicy = .bufferingNewest(defaultBufferingLimit)
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
  /// The handler must return quickly. It may subscribe, unsubscribe, post and change the
  /// pipeline's state; to stop the pipeline, call ``Pipeline/stop(whenStopped:)``, which is safe on
  /// a streaming thread. Messages posted on several threads reach it concurrently.
  /// A first subscriber (no stream or other sync handler yet) is first handed the backlog, on
  /// the calling thread before this returns, together with the messages posted meanwhile.
  /// A call already under way on another thread may finish after the handler is removed.
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
    _ = dispatcher
    return gst_bus_post(busPointer, gst_message_ref(message.pointer)) != 0
  }

  /// Takes the oldest message of `types` from the backlog (the messages posted while nobody
  /// subscribed), waiting up to `timeout` for one to be posted. Waits in vain while the bus
  /// has subscribers, as they take every message.
  ///
  /// This replaces `gst_bus_timed_pop_filtered`: nothing is queued on the `GstBus` itself.
  public func pop(_ types: Message.Types = .all, timeout: Duration = .zero) -> Message? {
    dispatcher.pop(types, timeout: timeout)
  }
}

internal import CGStreamer
internal import CGStreamerRTSPServer
import Synchronization

/// An RTSP server (gst-rtsp-server): media mounted at paths, each built from a gst-launch
/// description whose payloaders are named `pay0`, `pay1`…, served over RTP on UDP or
/// interleaved in the RTSP connection (TCP), optionally behind basic or digest authentication.
///
/// The server runs its own GLib main loop on a thread of its own, so nothing of the caller's has
/// to run one. Stop it when done: ``stop()`` ends every client's session and closes the socket.
public final class RTSPServer: @unchecked Sendable {
  // Safety (@unchecked): the server, its mount points and the loop are GObjects that GLib and
  // gst-rtsp-server lock themselves; `stopped` guards the one teardown.

  /// How clients may prove who they are.
  public enum Authentication: Sendable, Hashable {
    /// Basic (RFC 7617): the password crosses the network in the clear (base64).
    case basic
    /// Digest (RFC 7616): the password never crosses the network.
    case digest
  }

  /// How RTP may reach the clients.
  public struct Transports: OptionSet, Sendable, Hashable {
    /// GStreamer's `GstRTSPLowerTrans` flags.
    public let rawValue: UInt32
    /// Makes a set from GStreamer's `GstRTSPLowerTrans` flags.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// RTP and RTCP over UDP, to ports the client chose.
    public static let udp = Transports(rawValue: UInt32(GST_RTSP_LOWER_TRANS_UDP.rawValue))
    /// RTP and RTCP interleaved in the RTSP connection: through NATs and firewalls that pass TCP.
    public static let tcp = Transports(rawValue: UInt32(GST_RTSP_LOWER_TRANS_TCP.rawValue))
  }

  /// A user allowed in, when the server asks for credentials.
  public struct Credentials: Sendable, Hashable {
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// `user` with `password`.
    public init(user: String, password: String) {
      self.user = user
      self.password = password
    }
  }

  /// The port the server listens on (the one the system chose, when asked for port 0).
  public let port: Int
  /// The address the server listens on.
  public let address: String

  private let server: UnsafeMutablePointer<GstRTSPServer>
  private let context: OpaquePointer
  private let loop: OpaquePointer
  private let thread: UnsafeMutablePointer<GThread>
  private let source: UnsafeMutablePointer<GSource>
  private let requiresCredentials: Bool
  private let stopped = Mutex(false)

  /// The role the server gives every user it lets in.
  private static let role = "viewer"

  /// Starts a server listening on `address`:`port` (port 0: any free one, see ``port``); with
  /// `credentials`, only those users get in, by `authentication`.
  /// - Throws: ``GStreamerError/listenFailed(address:reason:)`` when it cannot listen there (in
  ///   use, not this host's).
  public init(
    address: String = "0.0.0.0", port: Int, credentials: [Credentials] = [], authentication: Authentication = .digest
  ) throws(GStreamerError) {
    try Gst.initialize()
    let server = gst_rtsp_server_new()!
    gst_rtsp_server_set_address(server, address)
    gst_rtsp_server_set_service(server, String(port))
    if !credentials.isEmpty {
      let auth = gst_rtsp_auth_new()!
      for user in credentials {
        let token = crtsp_token_new_role(Self.role)
        switch authentication {
        case .basic:
          let basic = gst_rtsp_auth_make_basic(user.user, user.password)
          gst_rtsp_auth_add_basic(auth, basic, token)
          g_free(basic)
        case .digest:
          gst_rtsp_auth_add_digest(auth, user.user, user.password, token)
        }
        gst_rtsp_token_unref(token)
      }
      gst_rtsp_auth_set_supported_methods(auth, authentication == .basic ? GST_RTSP_AUTH_BASIC : GST_RTSP_AUTH_DIGEST)
      gst_rtsp_server_set_auth(server, auth)
      g_object_unref(auth)
    }
    var error: UnsafeMutablePointer<GError>?
    guard let source = gst_rtsp_server_create_source(server, nil, &error) else {
      let message = error.map { GLibError(consuming: $0).message } ?? "unknown error"
      g_object_unref(server)
      throw .listenFailed(address: "\(address):\(port)", reason: message)
    }
    // Every client's connection is served on the server's own thread, where its clients are
    // also closed (``stop()``, a failed media): with gst-rtsp-server's client threads, a
    // connection closed from another thread while its thread read it left a watch reading a
    // closed connection, which spun a core (29.5 million GLib criticals in 2.5 minutes).
    let threads = gst_rtsp_server_get_thread_pool(server)!
    gst_rtsp_thread_pool_set_max_threads(threads, 0)
    g_object_unref(threads)
    context = g_main_context_new()
    g_source_attach(source, context)
    loop = g_main_loop_new(context, 0)
    let run: GThreadFunc = { loop in
      g_main_loop_run(OpaquePointer(loop))
      return nil
    }
    thread = g_thread_new("rtsp-server", run, UnsafeMutableRawPointer(loop))!
    self.server = server
    self.source = source
    self.address = address
    self.port = Int(gst_rtsp_server_get_bound_port(server))
    requiresCredentials = !credentials.isEmpty
  }

  deinit { stop() }

  /// Serves the media of `launch` at `path` (such as `/camera`): a gst-launch description in
  /// parentheses whose payloaders are named `pay0`, `pay1`… When `shared`, every client gets
  /// the same media (built once, encoded once); `configure` is called with its element (a bin)
  /// each time a media is built, on one of the server's threads, before it plays. `onFault` is
  /// called with each error a media's pipeline posts, and each warning of the elements of
  /// `launch` (not of the server's own), on the media's thread, before the media handles it. An
  /// error ends that media: the connections of its clients close (their sessions end), and the
  /// next client has a new media built.
  public func mount(
    _ path: String, launch: String, shared: Bool = true, transports: Transports = [.udp, .tcp],
    configure: @escaping @Sendable (Bin) -> Void = { _ in }, onFault: @escaping @Sendable (Message) -> Void = { _ in }
  ) {
    let factory = gst_rtsp_media_factory_new()!
    gst_rtsp_media_factory_set_launch(factory, launch)
    gst_rtsp_media_factory_set_shared(factory, shared ? 1 : 0)
    gst_rtsp_media_factory_set_protocols(factory, GstRTSPLowerTrans(rawValue: transports.rawValue))
    if requiresCredentials { crtsp_media_factory_allow(factory, Self.role) }
    let box = Unmanaged.passRetained(MediaConfigureBox(configure, onFault, server: server, context: context)).toOpaque()
    let callback:
      @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GstRTSPMedia>?, UnsafeMutableRawPointer?)
        -> Void = { _, media, data in
          guard let media, let data, let element = gst_rtsp_media_get_element(media) else { return }
          // The media's bus is read by the media itself; its handle-message signal (1.22) shows
          // each message to handlers first (the media's own handling is the class closure, run
          // last, whose result counts).
          let faulted:
            @convention(c) (
              UnsafeMutablePointer<GstRTSPMedia>?, UnsafeMutablePointer<GstMessage>?, UnsafeMutableRawPointer?
            ) -> gboolean = { media, message, data in
              guard let media, let message, let data else { return 1 }
              let box = Unmanaged<MediaConfigureBox>.fromOpaque(data).takeUnretainedValue()
              if message.pointee.type == GST_MESSAGE_ERROR {
                box.onFault(Message(retaining: message))
                RTSPServer.closeClients(of: media, on: box.server, in: box.context)
              } else if let element = gst_rtsp_media_get_element(media) {
                // Warnings of the server's own elements (its sinks warn of how it links them) are
                // the server's business; those of the launch description's elements are the mount's.
                defer { gst_object_unref(element) }
                let own = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstObject.self)
                if gst_object_has_as_ancestor(message.pointee.src, own) != 0 {
                  box.onFault(Message(retaining: message))
                }
              }
              return 1
            }
          for signal in ["handle-message::error", "handle-message::warning"] {
            _ = cgst_signal_connect(
              UnsafeMutableRawPointer(media), signal, unsafeBitCast(faulted, to: GCallback.self),
              Unmanaged<MediaConfigureBox>.fromOpaque(data).retain().toOpaque(), MediaConfigureBox.release)
          }
          let bin = Bin(adopting: UnsafeMutableRawPointer(element))
          Unmanaged<MediaConfigureBox>.fromOpaque(data).takeUnretainedValue().configure(bin)
        }
    _ = cgst_signal_connect(
      UnsafeMutableRawPointer(factory), "media-configure", unsafeBitCast(callback, to: GCallback.self), box,
      MediaConfigureBox.release)
    let mounts = gst_rtsp_server_get_mount_points(server)!
    // The mount points take the factory's reference.
    gst_rtsp_mount_points_add_factory(mounts, path, factory)
    g_object_unref(mounts)
  }

  /// Calls `handler` each time a client starts playing (its `PLAY` answered), on one of the
  /// server's threads: a shared media's encoder can then send a keyframe at once, so that a
  /// client that joins does not wait for the next one.
  public func onPlay(_ handler: @escaping @Sendable () -> Void) {
    let box = Unmanaged.passRetained(PlayBox(handler)).toOpaque()
    let connected:
      @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void =
        { _, client, data in
          guard let client, let data else { return }
          // Each client's connection holds the handler too, for as long as the client lives.
          let box = Unmanaged<PlayBox>.fromOpaque(data).retain().toOpaque()
          let played:
            @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) ->
              Void = { _, _, data in Unmanaged<PlayBox>.fromOpaque(data!).takeUnretainedValue().handler() }
          _ = cgst_signal_connect(
            client, "play-request", unsafeBitCast(played, to: GCallback.self), box, PlayBox.release)
        }
    _ = cgst_signal_connect(
      UnsafeMutableRawPointer(server), "client-connected", unsafeBitCast(connected, to: GCallback.self), box,
      PlayBox.release)
  }

  /// The RTSP sessions open now (a client that asked for SETUP and has not left).
  public var sessionCount: Int {
    let pool = gst_rtsp_server_get_session_pool(server)!
    defer { g_object_unref(pool) }
    return Int(gst_rtsp_session_pool_get_n_sessions(pool))
  }

  /// Ends every client's connection and session (their media stop), closes the listening
  /// socket and ends the server's thread. Once is enough; later calls do nothing.
  public func stop() {
    guard
      stopped.withLock({ stopped in
        defer { stopped = true }
        return !stopped
      })
    else { return }
    // On the server's thread, which serves the connections: close every client's, end every
    // session, stop listening, and quit from inside the loop (g_main_loop_quit from here is
    // lost when the thread has not entered g_main_loop_run yet, and the join waited forever).
    let teardown = Teardown(server: server, source: source, loop: loop)
    let box = Unmanaged.passRetained(teardown).toOpaque()
    let run: GSourceFunc = { data in
      Unmanaged<Teardown>.fromOpaque(data!).takeRetainedValue().run()
      return 0
    }
    g_main_context_invoke(context, run, box)
    _ = g_thread_join(thread)
    g_source_unref(source)
    g_main_loop_unref(loop)
    g_main_context_unref(context)
    g_object_unref(server)
  }

  /// Closes, on the server's thread (the one that iterates `context`), the connections of the
  /// clients that play `media`, which ends their sessions. Never on the caller's thread, even
  /// the server's: a media's bus handler must not wait for the media's own teardown. A job left
  /// when the context goes is dropped unrun.
  fileprivate static func closeClients(
    of media: UnsafeMutablePointer<GstRTSPMedia>, on server: UnsafeMutablePointer<GstRTSPServer>,
    in context: OpaquePointer
  ) {
    let job = Unmanaged.passRetained(CloseClientsJob(server: server, media: media)).toOpaque()
    let run: GSourceFunc = { data in
      Unmanaged<CloseClientsJob>.fromOpaque(data!).takeUnretainedValue().run()
      return 0
    }
    let release: GDestroyNotify = { data in Unmanaged<CloseClientsJob>.fromOpaque(data!).release() }
    let idle = g_idle_source_new()!
    g_source_set_callback(idle, run, job, release)
    g_source_attach(idle, context)
    g_source_unref(idle)
  }
}

/// The end of a server, run on its thread: every client's connection closed, every session
/// ended, the listening socket closed, the loop quit.
private final class Teardown {
  let server: UnsafeMutablePointer<GstRTSPServer>
  let source: UnsafeMutablePointer<GSource>
  let loop: OpaquePointer

  init(server: UnsafeMutablePointer<GstRTSPServer>, source: UnsafeMutablePointer<GSource>, loop: OpaquePointer) {
    (self.server, self.source, self.loop) = (server, source, loop)
  }

  func run() {
    let removeAll: GstRTSPServerClientFilterFunc = { _, _, _ in GST_RTSP_FILTER_REMOVE }
    g_list_free(gst_rtsp_server_client_filter(server, removeAll, nil))
    let pool = gst_rtsp_server_get_session_pool(server)!
    let removeSession: GstRTSPSessionPoolFilterFunc = { _, _, _ in GST_RTSP_FILTER_REMOVE }
    g_list_free(gst_rtsp_session_pool_filter(pool, removeSession, nil))
    g_object_unref(pool)
    g_source_destroy(source)
    g_main_loop_quit(loop)
  }
}

/// A failed media's clients to close on the server's thread: the server (alive while that
/// thread runs) and the media, held.
private final class CloseClientsJob {
  let server: UnsafeMutablePointer<GstRTSPServer>
  let media: UnsafeMutablePointer<GstRTSPMedia>

  init(server: UnsafeMutablePointer<GstRTSPServer>, media: UnsafeMutablePointer<GstRTSPMedia>) {
    self.server = server
    self.media = media
    g_object_ref(media)
  }

  deinit { g_object_unref(media) }

  func run() {
    let removeIfPlays: GstRTSPServerClientFilterFunc = { _, client, media in
      guard let client, let media else { return GST_RTSP_FILTER_KEEP }
      return CloseClientsJob.plays(client, media) ? GST_RTSP_FILTER_REMOVE : GST_RTSP_FILTER_KEEP
    }
    g_list_free(gst_rtsp_server_client_filter(server, removeIfPlays, media))
  }

  /// Whether one of `client`'s sessions plays `media`.
  static func plays(_ client: UnsafeMutablePointer<GstRTSPClient>, _ media: UnsafeMutableRawPointer) -> Bool {
    let sessions = gst_rtsp_client_session_filter(client, nil, nil)
    defer { g_list_free_full(sessions, g_object_unref) }
    for session in GListSequence(sessions) {
      let medias = gst_rtsp_session_filter(session.assumingMemoryBound(to: GstRTSPSession.self), nil, nil)
      defer { g_list_free_full(medias, g_object_unref) }
      for sessionMedia in GListSequence(medias) {
        let played = gst_rtsp_session_media_get_media(sessionMedia.assumingMemoryBound(to: GstRTSPSessionMedia.self))
        if UnsafeMutableRawPointer(played) == media { return true }
      }
    }
    return false
  }
}

/// The data of a `GList`'s items, in order.
private struct GListSequence: Sequence, IteratorProtocol {
  var node: UnsafeMutablePointer<GList>?
  init(_ list: UnsafeMutablePointer<GList>?) { node = list }
  mutating func next() -> UnsafeMutableRawPointer? {
    while let current = node {
      node = current.pointee.next
      if let data = current.pointee.data { return data }
    }
    return nil
  }
}

/// Holds a mount's `media-configure` and fault handlers for the C callbacks, and where a failed
/// media's clients are closed.
private final class MediaConfigureBox: Sendable {
  let configure: @Sendable (Bin) -> Void
  let onFault: @Sendable (Message) -> Void
  /// The server, not retained (it owns the box through its mount points): used only on its own
  /// thread, which runs while the server lives.
  nonisolated(unsafe) let server: UnsafeMutablePointer<GstRTSPServer>
  /// The server thread's context, retained.
  nonisolated(unsafe) let context: OpaquePointer

  init(
    _ configure: @escaping @Sendable (Bin) -> Void, _ onFault: @escaping @Sendable (Message) -> Void,
    server: UnsafeMutablePointer<GstRTSPServer>, context: OpaquePointer
  ) {
    self.configure = configure
    self.onFault = onFault
    self.server = server
    self.context = g_main_context_ref(context)
  }

  deinit { g_main_context_unref(context) }

  /// Releases a reference a signal connection held.
  static let release: GClosureNotify = { data, _ in Unmanaged<MediaConfigureBox>.fromOpaque(data!).release() }
}

/// Holds a `play-request` handler for the C callbacks.
private final class PlayBox: Sendable {
  let handler: @Sendable () -> Void
  init(_ handler: @escaping @Sendable () -> Void) { self.handler = handler }

  /// Releases a reference the signal connection held.
  static let release: GClosureNotify = { data, _ in Unmanaged<PlayBox>.fromOpaque(data!).release() }
}

internal import CGStreamer

// MARK: - Cancellable

/// A switch that ends a blocking ``SocketConnection`` call from another thread: a connect, a
/// TLS handshake, a read or a write waiting on it returns ``SocketConnectionError/cancelled``
/// at once, and so does every later one.
///
/// The corresponding C type is `GCancellable`.
public final class Cancellable: @unchecked Sendable {
  // Safety (@unchecked): GCancellable is thread-safe; the pointer itself never changes.
  let pointer: UnsafeMutablePointer<GCancellable>

  /// A cancellable not yet cancelled.
  public init() { pointer = g_cancellable_new() }

  deinit { g_object_unref(pointer) }

  /// Cancels every call waiting on it, and every later one. The corresponding C function is
  /// `g_cancellable_cancel`.
  public func cancel() { g_cancellable_cancel(pointer) }

  /// Whether ``cancel()`` was called.
  public var isCancelled: Bool { g_cancellable_is_cancelled(pointer) != 0 }
}

// MARK: - SocketConnectionError

/// Why a ``SocketConnection`` could not connect, read or write.
public enum SocketConnectionError: Error, Sendable, CustomStringConvertible {
  /// The ``Cancellable`` was cancelled.
  case cancelled
  /// The server's TLS certificate is not trusted for `host`; `reasons` says why (`signed by an
  /// unknown certificate authority`, `issued for another host`, …).
  case untrustedCertificate(host: String, reasons: String)
  /// The file of trusted certificates could not be read as PEM certificates.
  case certificateFile(path: String, GLibError)
  /// Anything else GIO reported: no such host, refused, reset, timed out, a TLS failure.
  case failed(GLibError)

  /// One line, GIO's message where it gave one.
  public var description: String {
    switch self {
    case .cancelled: "cancelled"
    case .untrustedCertificate(let host, let reasons): "the TLS certificate of \(host) is not trusted (\(reasons))"
    case .certificateFile(let path, let error): "cannot read the certificates in \(path): \(error.message)"
    case .failed(let error): error.message
    }
  }

  /// `.cancelled` for GIO's cancellation, `.failed` for anything else; frees the `GError`.
  init(consuming error: UnsafeMutablePointer<GError>) {
    if error.pointee.domain == g_io_error_quark(), error.pointee.code == Int32(G_IO_ERROR_CANCELLED.rawValue) {
      g_error_free(error)
      self = .cancelled
    } else {
      self = .failed(GLibError(consuming: error))
    }
  }
}

// MARK: - SocketConnection

/// A blocking TCP connection, over TLS or not: connects (resolving the host), writes, reads and
/// closes, each call blocking its thread until done, the connection's ``Cancellable`` is
/// cancelled (from any thread), or the socket's timeout passes. For a small client, such as
/// WHIP's HTTP exchange, run on a thread of its own.
///
/// TLS comes from GIO's TLS backend (glib-networking's gnutls module), which GIO loads the
/// first time a TLS connection is made: a process that makes none maps no TLS library. No proxy
/// is used.
///
/// The corresponding C types are `GSocketClient`, `GSocketConnection` and `GTlsClientConnection`.
public final class SocketConnection {
  /// Whether and how a connection is secured.
  public enum Security: Sendable, Equatable {
    /// Plain TCP.
    case plain
    /// TLS, the server's certificate checked for the host against the system's certificate
    /// authorities, or against those in the PEM file `trustedCertificates` instead when given.
    case tls(trustedCertificates: String?)
  }

  private let connection: UnsafeMutablePointer<GSocketConnection>
  /// The TLS connection over `connection`, when secured.
  private let tls: UnsafeMutablePointer<GIOStream>?
  private let cancellable: Cancellable
  private var closed = false

  /// Connects to `host` and `port`, and for `.tls` makes the TLS handshake, checking the
  /// certificate for `host`.
  /// - Parameters:
  ///   - host: a name or an address (IPv6 without brackets).
  ///   - port: the TCP port.
  ///   - security: plain TCP, or TLS and the authorities it trusts.
  ///   - timeout: the longest any one call (connect, each read or write) waits, whole seconds
  ///     (at least one).
  ///   - cancellable: cancelled from another thread, it ends a call that waits (and the connect).
  /// - Throws: ``SocketConnectionError``.
  public init(
    host: String, port: Int, security: Security, timeout: Duration, cancellable: Cancellable
  ) throws(SocketConnectionError) {
    self.cancellable = cancellable
    let client = g_socket_client_new()!
    defer { g_object_unref(client) }
    let seconds = max(1, timeout.components.seconds + (timeout.components.attoseconds > 0 ? 1 : 0))
    g_socket_client_set_timeout(client, guint(clamping: seconds))
    g_socket_client_set_enable_proxy(client, 0)
    let address = g_network_address_new(host, guint16(clamping: port))!
    defer { g_object_unref(UnsafeMutableRawPointer(address)) }
    var error: UnsafeMutablePointer<GError>?
    guard let connection = g_socket_client_connect(client, address, cancellable.pointer, &error) else {
      throw SocketConnectionError(consuming: error!)
    }
    self.connection = connection
    guard case .tls(let trustedCertificates) = security else {
      tls = nil
      return
    }
    let base = UnsafeMutableRawPointer(connection).assumingMemoryBound(to: GIOStream.self)
    guard let stream = g_tls_client_connection_new(base, address, &error) else {
      g_object_unref(connection)
      throw SocketConnectionError(consuming: error!)
    }
    tls = stream
    let tlsConnection = UnsafeMutableRawPointer(stream).assumingMemoryBound(to: GTlsConnection.self)
    if let path = trustedCertificates {
      guard let database = g_tls_file_database_new(path, &error) else {
        // Initialized whole: deinit closes and releases.
        throw .certificateFile(path: path, GLibError(consuming: error!))
      }
      g_tls_connection_set_database(tlsConnection, database)
      g_object_unref(database)
    }
    guard g_tls_connection_handshake(tlsConnection, cancellable.pointer, &error) != 0 else {
      let flags = g_tls_connection_get_peer_certificate_errors(tlsConnection)
      var failure = SocketConnectionError(consuming: error!)
      if case .failed(let glib) = failure, glib.domain == String(cString: g_quark_to_string(g_tls_error_quark())),
        glib.code == Int32(G_TLS_ERROR_BAD_CERTIFICATE.rawValue)
      {
        failure = .untrustedCertificate(host: host, reasons: Self.reasons(flags.rawValue, else: glib.message))
      }
      throw failure  // Initialized whole: deinit closes and releases.
    }
  }

  deinit {
    close()
    if let tls { g_object_unref(tls) }
    g_object_unref(connection)
  }

  /// The stream read and written: the TLS connection or the plain one.
  private var stream: UnsafeMutablePointer<GIOStream> {
    tls ?? UnsafeMutableRawPointer(connection).assumingMemoryBound(to: GIOStream.self)
  }

  /// Writes all of `bytes`. The corresponding C function is `g_output_stream_write_all`.
  /// - Throws: ``SocketConnectionError``.
  public func write(_ bytes: [UInt8]) throws(SocketConnectionError) {
    var error: UnsafeMutablePointer<GError>?
    var written: gsize = 0
    let ok = bytes.withUnsafeBytes { raw in
      g_output_stream_write_all(
        g_io_stream_get_output_stream(stream), raw.baseAddress, gsize(raw.count), &written, cancellable.pointer,
        &error)
    }
    if ok == 0 { throw SocketConnectionError(consuming: error!) }
  }

  /// Reads what has come, at most `count` bytes; none at the end of the stream. The
  /// corresponding C function is `g_input_stream_read`.
  /// - Throws: ``SocketConnectionError``.
  public func read(upTo count: Int) throws(SocketConnectionError) -> [UInt8] {
    var error: UnsafeMutablePointer<GError>?
    var bytes = [UInt8](repeating: 0, count: max(count, 1))
    let read = bytes.withUnsafeMutableBytes { raw in
      g_input_stream_read(
        g_io_stream_get_input_stream(stream), raw.baseAddress, gsize(raw.count), cancellable.pointer, &error)
    }
    if read < 0 { throw SocketConnectionError(consuming: error!) }
    return Array(bytes.prefix(read))
  }

  /// Closes the socket at once (no TLS close notification: the exchange is over, and a server
  /// that does not read would hold it up). The corresponding C function is `g_io_stream_close`
  /// on the TCP connection.
  public func close() {
    guard !closed else { return }
    closed = true
    g_io_stream_close(UnsafeMutableRawPointer(connection).assumingMemoryBound(to: GIOStream.self), nil, nil)
  }

  /// What `GTlsCertificateFlags` say, `fallback` (GIO's message) when none is known.
  private static func reasons(_ flags: UInt32, else fallback: String) -> String {
    let known: [(GTlsCertificateFlags, String)] = [
      (G_TLS_CERTIFICATE_UNKNOWN_CA, "signed by an unknown certificate authority"),
      (G_TLS_CERTIFICATE_BAD_IDENTITY, "issued for another host"),
      (G_TLS_CERTIFICATE_NOT_ACTIVATED, "not valid yet"),
      (G_TLS_CERTIFICATE_EXPIRED, "expired"),
      (G_TLS_CERTIFICATE_REVOKED, "revoked"),
      (G_TLS_CERTIFICATE_INSECURE, "insecure"),
    ]
    let said = known.filter { flags & $0.0.rawValue != 0 }.map(\.1)
    return said.isEmpty ? fallback : said.joined(separator: ", ")
  }
}

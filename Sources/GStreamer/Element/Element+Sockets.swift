internal import CGStreamer

extension Element {
  /// Makes `other` (a `udpsink` or `udpsrc`) use the socket this `udpsrc` or `udpsink` has bound,
  /// so that both send and receive on one port: symmetric RTP/RTCP. Call it once this element
  /// is in state ``State/ready`` (it has bound its socket) and before `other` leaves ``State/null``.
  /// - Throws: ``GStreamerError/invalidPropertyValue(element:property:value:reason:)`` when this
  ///   element has no socket yet.
  public func shareSocket(with other: Element) throws(GStreamerError) {
    guard let socket = usedSocket() else {
      throw .invalidPropertyValue(
        element: name, property: "used-socket", value: "NULL", reason: "the element has not bound a socket yet")
    }
    defer { g_object_unref(socket) }
    var value = GValue()
    g_value_init(&value, g_socket_get_type())
    defer { g_value_unset(&value) }
    g_value_set_object(&value, socket)
    g_object_set_property(other.rawPointer.assumingMemoryBound(to: GObject.self), "socket", &value)
    try other.set("close-socket", false)
  }

  /// Sends one datagram from the socket this `udpsrc` or `udpsink` has bound to `host`:`port`
  /// (a numeric address): for a packet that must come from the port the peer knows, such as
  /// RTCP feedback sent outside the session's schedule.
  ///
  /// The corresponding C function is `g_socket_send_to`.
  /// - Returns: whether the whole datagram was sent (false: no socket yet, a malformed address, or
  ///   the socket refused it).
  @discardableResult
  public func sendDatagram(_ bytes: [UInt8], to host: String, port: Int) -> Bool {
    guard let port = UInt16(exactly: port), let socket = usedSocket() else { return false }
    defer { g_object_unref(socket) }
    guard let address = g_inet_socket_address_new_from_string(host, UInt32(port)) else { return false }
    defer { g_object_unref(address) }
    let sent = bytes.withUnsafeBufferPointer { data in
      data.withMemoryRebound(to: CChar.self) { data in
        g_socket_send_to(
          socket.assumingMemoryBound(to: GSocket.self), address, data.baseAddress, gsize(data.count), nil, nil)
      }
    }
    return sent == bytes.count
  }

  /// The `GSocket` this `udpsrc` or `udpsink` has bound (its `used-socket`), with a reference
  /// the caller releases; nil before it has one.
  private func usedSocket() -> UnsafeMutableRawPointer? {
    var value = GValue()
    g_value_init(&value, g_socket_get_type())
    defer { g_value_unset(&value) }
    g_object_get_property(rawPointer.assumingMemoryBound(to: GObject.self), "used-socket", &value)
    return g_value_dup_object(&value)
  }
}

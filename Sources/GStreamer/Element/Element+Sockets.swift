internal import CGStreamer

extension Element {
  /// Makes `other` (a `udpsink` or `udpsrc`) use the socket this `udpsrc` or `udpsink` has bound,
  /// so that both send and receive on one port: symmetric RTP/RTCP. Call it once this element
  /// is in state ``State/ready`` (it has bound its socket) and before `other` leaves ``State/null``.
  /// - Throws: ``GStreamerError/invalidPropertyValue(element:property:value:reason:)`` when this
  ///   element has no socket yet.
  public func shareSocket(with other: Element) throws(GStreamerError) {
    guard cgst_share_socket(elementPointer, other.elementPointer) != 0 else {
      throw .invalidPropertyValue(
        element: name, property: "used-socket", value: "NULL", reason: "the element has not bound a socket yet")
    }
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
    guard let port = UInt16(exactly: port) else { return false }
    return bytes.withUnsafeBufferPointer { data in
      cgst_socket_send_to(elementPointer, host, port, data.baseAddress, gsize(data.count)) != 0
    }
  }
}

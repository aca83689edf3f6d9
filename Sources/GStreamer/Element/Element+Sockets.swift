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
}

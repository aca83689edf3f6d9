internal import CGStreamer
internal import CGStreamerRTP

extension Element {
  /// Makes this RTP payloader write the header extension `uri` (RFC 8285) into every packet as
  /// extension `id`, with the extension element's `properties` set first: for instance
  /// `urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id` with `rid` set to a simulcast layer's
  /// name. The payloader adds `extmap-ID=URI` to its output caps, which is what `webrtcbin`
  /// puts in an offer. Returns the extension element, whose properties may change later.
  ///
  /// The corresponding C functions are `gst_rtp_header_extension_create_from_uri` and the
  /// payloader's `add-extension` action signal.
  /// - Throws: ``GStreamerError/elementNotFound(factory:package:)`` when no installed element
  ///   implements `uri`; ``GStreamerError/noSuchProperty(element:property:)`` or
  ///   ``GStreamerError/propertyTypeMismatch(element:property:expected:given:)`` for a bad
  ///   property; ``GStreamerError/wrongElementType(element:expected:actual:)`` when this element
  ///   is no payloader.
  @discardableResult
  public func addRTPHeaderExtension(uri: String, id: Int, properties: [String: Value] = [:]) throws(GStreamerError)
    -> Element
  {
    guard isA(gst_rtp_base_payload_get_type()) else {
      throw .wrongElementType(element: name, expected: "GstRTPBasePayload", actual: typeName)
    }
    guard let pointer = crtp_header_extension_new(uri, guint(id)) else {
      throw .elementNotFound(factory: uri, package: "gst-plugins-good (rtpmanager)")
    }
    let extensionElement = Element(adopting: UnsafeMutableRawPointer(pointer))
    for (property, value) in properties { try extensionElement.set(property, value) }
    crtp_payloader_add_extension(elementPointer, pointer)
    return extensionElement
  }
}

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
    // A new extension is floating; the element wrapper below takes it.
    guard let pointer = gst_rtp_header_extension_create_from_uri(uri) else {
      throw .elementNotFound(factory: uri, package: "gst-plugins-good (rtpmanager)")
    }
    gst_rtp_header_extension_set_id(pointer, guint(id))
    let extensionElement = Element(adopting: UnsafeMutableRawPointer(pointer))
    for (property, value) in properties { try extensionElement.set(property, value) }
    crtp_payloader_add_extension(elementPointer, pointer)
    return extensionElement
  }
}

extension Pad {
  /// The URI of the absolute send time header extension, which receivers that estimate the
  /// path's bandwidth from packet delays (REMB: libwebrtc, aiortc, Janus) read.
  public static let absoluteSendTimeURI = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"

  /// Writes the absolute send time header extension (``absoluteSendTimeURI``: 24 bits, seconds
  /// in 6.18 fixed point, of the monotonic clock when the packet passes) as one-byte extension
  /// `id` (RFC 8285) into every RTP packet that passes this pad, in buffers and buffer lists.
  /// GStreamer 1.22 has no header extension element for it; the caps that announce it
  /// (`extmap-ID`) are the caller's. Returns the probe's id.
  ///
  /// The corresponding C function is `gst_rtp_buffer_add_extension_onebyte_header`.
  @discardableResult
  public func writeAbsoluteSendTime(id: Int) -> UInt? {
    precondition((1...14).contains(id), "a one-byte header extension's id is 1 to 14")
    let type = GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
    let probe = gst_pad_add_probe(
      padPointer, type, Trampolines.absoluteSendTime, UnsafeMutableRawPointer(bitPattern: id), nil)
    return probe == 0 ? nil : UInt(probe)
  }
}

extension Trampolines {
  /// Writes the absolute send time into the probed buffer or list (its id is the user data),
  /// making them writable first (a shallow copy when shared).
  static let absoluteSendTime: GstPadProbeCallback = { _, info, userData in
    guard let info, let data = info.pointee.data else { return GST_PAD_PROBE_OK }
    let id = guint8(UInt(bitPattern: userData))
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let fixed = (UInt64(now.tv_sec) << 18 + (UInt64(now.tv_nsec) << 18) / 1_000_000_000) & 0xFF_FFFF
    var bytes: [guint8] = [guint8(fixed >> 16), guint8(fixed >> 8 & 0xFF), guint8(fixed & 0xFF)]
    let object = gst_mini_object_make_writable(data.assumingMemoryBound(to: GstMiniObject.self))!
    info.pointee.data = UnsafeMutableRawPointer(object)
    func write(_ buffer: UnsafeMutablePointer<GstBuffer>) {
      var rtp = GstRTPBuffer()
      guard gst_rtp_buffer_map(buffer, GstMapFlags(rawValue: GST_MAP_READ.rawValue | GST_MAP_WRITE.rawValue), &rtp) != 0
      else { return }
      _ = gst_rtp_buffer_add_extension_onebyte_header(&rtp, id, &bytes, 3)
      gst_rtp_buffer_unmap(&rtp)
    }
    if info.pointee.type.rawValue & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0 {
      write(UnsafeMutableRawPointer(object).assumingMemoryBound(to: GstBuffer.self))
    } else {
      let list = OpaquePointer(object)
      for index in 0..<gst_buffer_list_length(list) {
        if let buffer = gst_buffer_list_get_writable(list, index) { write(buffer) }
      }
    }
    return GST_PAD_PROBE_OK
  }
}

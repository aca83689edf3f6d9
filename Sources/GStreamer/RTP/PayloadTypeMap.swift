internal import CGStreamer

extension Element {
  /// Answers the element's `request-pt-map` signal (`rtpjitterbuffer`, `rtpbin`, `rtpptdemux`):
  /// the caps of RTP payload type `pt` (with its `clock-rate`), or nil when it is not known.
  /// Without an answer, `rtpjitterbuffer` drops every packet of a payload type other than its
  /// caps', such as the FEC packets of a stream. `handler` is called on a streaming thread, for
  /// as long as the element lives.
  ///
  /// The corresponding C function is `g_signal_connect_data`.
  public func answerPayloadTypeMap(_ handler: @escaping @Sendable (_ pt: Int) -> Caps?) {
    let box = Unmanaged.passRetained(PayloadTypeMapBox(handler)).toOpaque()
    let callback:
      @convention(c) (UnsafeMutableRawPointer?, guint, UnsafeMutableRawPointer?) -> UnsafeMutablePointer<
        GstCaps
      >? = { _, pt, data in
        let box = Unmanaged<PayloadTypeMapBox>.fromOpaque(data!).takeUnretainedValue()
        // The signal's caller owns the caps returned (transfer full).
        return box.handler(Int(pt)).map { caps in caps.withPointer { gst_caps_ref($0) } }
      }
    let release: GClosureNotify = { data, _ in
      Unmanaged<PayloadTypeMapBox>.fromOpaque(data!).release()
    }
    _ = cgst_signal_connect(
      rawPointer, "request-pt-map", unsafeBitCast(callback, to: GCallback.self), box, release)
  }
}

/// Holds a `request-pt-map` handler for the C callback.
private final class PayloadTypeMapBox: Sendable {
  let handler: @Sendable (Int) -> Caps?
  init(_ handler: @escaping @Sendable (Int) -> Caps?) { self.handler = handler }
}

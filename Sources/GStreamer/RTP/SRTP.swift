internal import CGStreamer

extension Element {
  /// Answers `srtpdec`'s `request-key` signal: the SRTP parameters of the stream of an SSRC
  /// the decoder has not seen yet, as caps (`application/x-srtp` with `srtp-key` (a buffer),
  /// `srtp-cipher`, `srtp-auth`, `srtcp-cipher` and `srtcp-auth`), or nil to leave the stream
  /// undecoded (its packets are dropped). The decoder asks once per SSRC, RTP and RTCP alike.
  /// `handler` is called on a streaming thread, for as long as the element lives.
  ///
  /// The corresponding C function is `g_signal_connect_data`.
  public func answerKeyRequests(_ handler: @escaping @Sendable (_ ssrc: UInt32) -> Caps?) {
    let box = Unmanaged.passRetained(KeyRequestBox(handler)).toOpaque()
    let callback:
      @convention(c) (UnsafeMutableRawPointer?, guint, UnsafeMutableRawPointer?) -> UnsafeMutablePointer<
        GstCaps
      >? = { _, ssrc, data in
        let box = Unmanaged<KeyRequestBox>.fromOpaque(data!).takeUnretainedValue()
        // The signal's caller owns the caps returned (transfer full).
        return box.handler(UInt32(ssrc)).map { caps in caps.withPointer { gst_caps_ref($0) } }
      }
    let release: GClosureNotify = { data, _ in
      Unmanaged<KeyRequestBox>.fromOpaque(data!).release()
    }
    _ = cgst_signal_connect(rawPointer, "request-key", unsafeBitCast(callback, to: GCallback.self), box, release)
  }

  /// Makes `srtpdec` forget every stream (their keys, libsrtp contexts, rollover counters and
  /// replay windows) and free them; the next packet of each SSRC asks for its key again
  /// (``answerKeyRequests(_:)``, whose answer may give the stream's rollover counter as `roc`).
  /// Call it from the application or an upstream streaming thread, never from a `request-key`
  /// handler, which runs under the decoder's lock.
  ///
  /// (Its `remove-key` signal frees no memory in GStreamer 1.22: it looks the libsrtp stream up
  /// by an SSRC in host byte order, where libsrtp wants network order, and leaves it be.)
  ///
  /// The corresponding C function is `g_signal_emit_by_name` with `clear-keys`.
  public func clearKeys() {
    cgst_signal_emit(rawPointer, "clear-keys")
  }
}

/// Holds a `request-key` handler for the C callback.
private final class KeyRequestBox: Sendable {
  let handler: @Sendable (UInt32) -> Caps?
  init(_ handler: @escaping @Sendable (UInt32) -> Caps?) { self.handler = handler }
}

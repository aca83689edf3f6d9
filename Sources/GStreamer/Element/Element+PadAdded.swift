internal import CGStreamer

extension Element {
  /// Calls `handler` with each pad the element adds from now on (a demuxer's or `webrtcbin`'s
  /// streams, as they appear), on the thread that adds it, for as long as the element lives.
  /// The element holds `handler`: capture its pipeline (or the element) weakly.
  ///
  /// The corresponding C function is `g_signal_connect_data` (`pad-added`).
  public func onPadAdded(_ handler: @escaping @Sendable (Pad) -> Void) {
    let box = Unmanaged.passRetained(PadAddedBox(handler)).toOpaque()
    let callback:
      @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void =
        { _, pad, data in
          guard let pad, let data else { return }
          let wrapped = Pad(retaining: pad)
          Unmanaged<PadAddedBox>.fromOpaque(data).takeUnretainedValue().handler(wrapped)
        }
    let release: GClosureNotify = { data, _ in Unmanaged<PadAddedBox>.fromOpaque(data!).release() }
    _ = cgst_signal_connect(rawPointer, "pad-added", unsafeBitCast(callback, to: GCallback.self), box, release)
  }
}

/// Holds a `pad-added` handler for the C callback.
private final class PadAddedBox: Sendable {
  let handler: @Sendable (Pad) -> Void
  init(_ handler: @escaping @Sendable (Pad) -> Void) { self.handler = handler }
}

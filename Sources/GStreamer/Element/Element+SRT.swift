internal import CGStreamer

extension Element {
  /// Calls `handler` each time a caller connects to this `srtsink` (or `srtsrc`) in listener
  /// mode, on the element's thread that accepts it, for as long as the element lives. The
  /// element holds `handler`: capture its pipeline (or the element) weakly.
  ///
  /// The corresponding C function is `g_signal_connect_data` (`caller-added`).
  public func onSRTCallerAdded(_ handler: @escaping @Sendable () -> Void) {
    let box = Unmanaged.passRetained(CallerAddedBox(handler)).toOpaque()
    // `caller-added` gives the element, the socket (a gint) and the caller's GSocketAddress.
    let callback:
      @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void =
        { _, _, _, data in
          guard let data else { return }
          Unmanaged<CallerAddedBox>.fromOpaque(data).takeUnretainedValue().handler()
        }
    let release: GClosureNotify = { data, _ in Unmanaged<CallerAddedBox>.fromOpaque(data!).release() }
    _ = cgst_signal_connect(rawPointer, "caller-added", unsafeBitCast(callback, to: GCallback.self), box, release)
  }
}

/// Holds a `caller-added` handler for the C callback.
private final class CallerAddedBox: Sendable {
  let handler: @Sendable () -> Void
  init(_ handler: @escaping @Sendable () -> Void) { self.handler = handler }
}

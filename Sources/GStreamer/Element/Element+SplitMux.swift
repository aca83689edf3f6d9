internal import CGStreamer

extension Element {
  /// Names each file `splitmuxsink` opens: `handler` is given the file's index (from the
  /// element's `start-index`) and the first sample that goes into it (its buffer's PTS a time in
  /// the sample's segment, ``Sample/runningTime(of:)``), and returns the file's path. It is
  /// called on a streaming thread as each file starts, for as long as the element lives, and
  /// must return quickly; nil lets the element use its `location` pattern.
  ///
  /// The corresponding C function is `g_signal_connect_data` (`format-location-full`).
  public func nameSplitFiles(_ handler: @escaping @Sendable (_ index: Int, _ first: Sample?) -> String?) {
    let box = Unmanaged.passRetained(SplitFileNameBox(handler)).toOpaque()
    let callback:
      @convention(c) (UnsafeMutableRawPointer?, guint, OpaquePointer?, UnsafeMutableRawPointer?) ->
        UnsafeMutablePointer<
          gchar
        >? = { _, index, sample, data in
          // The sample is the signal's (transfer none): the wrapper takes a reference of its own.
          let first = sample.map { Sample(adopting: gst_sample_ref($0)) }
          let name = Unmanaged<SplitFileNameBox>.fromOpaque(data!).takeUnretainedValue().handler(Int(index), first)
          // The signal's caller frees the string (transfer full).
          return name.map { g_strdup($0) }
        }
    let release: GClosureNotify = { data, _ in Unmanaged<SplitFileNameBox>.fromOpaque(data!).release() }
    _ = cgst_signal_connect(
      rawPointer, "format-location-full", unsafeBitCast(callback, to: GCallback.self), box, release)
  }
}

/// Holds a `format-location-full` handler for the C callback.
private final class SplitFileNameBox: Sendable {
  let handler: @Sendable (Int, Sample?) -> String?
  init(_ handler: @escaping @Sendable (Int, Sample?) -> String?) { self.handler = handler }
}

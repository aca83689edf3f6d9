internal import CGStreamer

/// GStreamer's `leaks` tracer, for tests and diagnostics of object lifetimes.
///
/// The tracer is only active when the process starts GStreamer with `GST_TRACERS=leaks` in
/// its environment (set before the first use of this module).
public enum LeaksTracer {
  /// The active leaks tracer, if any. It lives as long as the process, so no reference is
  /// taken or released here (releasing the list's references is what made GStreamer 1.22 warn).
  private static func tracer() -> UnsafeMutableRawPointer? {
    Gst.ensureInitialized()
    let list = gst_tracing_get_active_tracers()
    defer { g_list_free(list) }
    var node = list
    while let current = node {
      if let data = current.pointee.data, String(cString: g_type_name(cgst_instance_type(data))) == "GstLeaksTracer" {
        return data
      }
      node = current.pointee.next
    }
    return nil
  }

  /// Whether the leaks tracer is active in this process.
  public static var isActive: Bool {
    tracer() != nil
  }

  /// Starts recording which objects are created and destroyed, for ``checkpoint()``.
  /// - Returns: false when the tracer is not active.
  @discardableResult
  public static func startTracking() -> Bool {
    guard let tracer = tracer() else { return false }
    var unused: gpointer?
    cgst_signal_emit_returning_pointer(tracer, "activity-start-tracking", &unused)
    return true
  }

  /// Stops recording.
  public static func stopTracking() {
    guard let tracer = tracer() else { return }
    var unused: gpointer?
    cgst_signal_emit_returning_pointer(tracer, "activity-stop-tracking", &unused)
  }

  /// Objects created since tracking started (or since the previous checkpoint) and not destroyed
  /// since, counted by type name (`GstBuffer`, `GstPipeline`…); nil when the tracer is not active.
  ///
  /// The tracer records created and destroyed objects by address, so an object destroyed and
  /// another created at the same address count as one destroyed: the result can only undercount.
  public static func checkpoint() -> [String: Int]? {
    guard let tracer = tracer() else { return nil }
    var result: gpointer?
    cgst_signal_emit_returning_pointer(tracer, "activity-get-checkpoint", &result)
    guard let result else { return [:] }
    let structure = Structure(adopting: result.assumingMemoryBound(to: GstStructure.self))
    let removed = Set(entries(structure["objects-removed-list"]).map(\.address))
    var counts: [String: Int] = [:]
    for (type, address) in entries(structure["objects-created-list"]) where !removed.contains(address) {
      counts[type, default: 0] += 1
    }
    return counts
  }

  /// The type name and address of each object in a checkpoint list.
  private static func entries(_ list: Value?) -> [(type: String, address: String)] {
    guard case .list(let items) = list else { return [] }
    return items.compactMap { item in
      guard case .structure(let entry) = item else { return nil }
      return (entry.get("type-name", as: String.self) ?? "?", entry.get("address", as: String.self) ?? "?")
    }
  }
}

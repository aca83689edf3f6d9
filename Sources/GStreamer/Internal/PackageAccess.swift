internal import CGStreamer

// The C objects behind the wrappers, as untyped pointers, for the package's other modules over
// GStreamer's C libraries (GStreamerCheck): they import their own C module, so the wrappers'
// typed pointers are not theirs to name.

extension Object {
  /// The C object (a `GstObject`), borrowed.
  package var unsafeRawObject: UnsafeMutableRawPointer { rawPointer }

  /// Wraps a C object (a `GstObject`) in the most specific wrapper class, taking a reference of
  /// its own.
  package static func wrap(borrowing pointer: UnsafeMutableRawPointer) -> Object { wrap(retaining: pointer) }
}

extension Buffer {
  /// Wraps a `GstBuffer` whose reference the caller passes on (transfer full).
  package init(adoptingRaw pointer: UnsafeMutableRawPointer) {
    self.init(adopting: pointer.assumingMemoryBound(to: GstBuffer.self))
  }

  /// The `GstBuffer` with a reference the callee takes (transfer full).
  package consuming func takeRaw() -> UnsafeMutableRawPointer { UnsafeMutableRawPointer(take()) }
}

extension Event {
  /// Wraps a `GstEvent` whose reference the caller passes on (transfer full).
  package init(adoptingRaw pointer: UnsafeMutableRawPointer) {
    let event = pointer.assumingMemoryBound(to: GstEvent.self)
    self.init(retaining: event)
    gst_event_unref(event)
  }

  /// The `GstEvent` with a new reference the callee takes (transfer full).
  package func newRawReference() -> UnsafeMutableRawPointer { UnsafeMutableRawPointer(newReference()) }
}

extension Caps {
  /// Calls `body` with the `GstCaps`, borrowed for the call.
  package func withRawPointer<R>(_ body: (UnsafeMutableRawPointer) throws -> R) rethrows -> R {
    try withPointer { try body(UnsafeMutableRawPointer($0)) }
  }
}

extension FlowError {
  /// Converts a `GstFlowReturn`'s value; nil for success values.
  package init?(rawFlow: Int32) { self.init(GstFlowReturn(rawValue: rawFlow)) }
}

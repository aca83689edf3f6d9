/// A GStreamer object pointer that may cross threads: whoever stores one says in a comment
/// which reference it stands for, and GStreamer objects are thread-safe.
// Safety: GstObject reference counting and the APIs used on these pointers are thread-safe.
struct GPointer: @unchecked Sendable, Hashable {
  let raw: UnsafeMutableRawPointer
  init(_ raw: UnsafeMutableRawPointer) { self.raw = raw }
}

internal import CGStreamer

/// A set of media formats: one ``Structure`` per alternative, such as
/// `video/x-raw, format=NV12, width=1280, height=720, framerate=30/1`.
///
/// Caps are values: a copy is cheap (it shares GStreamer's reference) and changing one copies
/// the underlying caps only when they are shared. The corresponding C type is `GstCaps`.
public struct Caps: Sendable, Equatable, CustomStringConvertible {
  /// Owns one reference to the caps.
  // Safety: GstCaps reference counting is atomic; the box is only mutated when uniquely owned and writable.
  final class Storage: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<GstCaps>
    init(adopting pointer: UnsafeMutablePointer<GstCaps>) { self.pointer = pointer }
    deinit { gst_caps_unref(pointer) }
  }

  private var storage: Storage

  /// Adopts a reference the caller owns (transfer full).
  init(adopting pointer: UnsafeMutablePointer<GstCaps>) { storage = Storage(adopting: pointer) }

  /// Takes a reference of its own to borrowed caps.
  init(retaining pointer: UnsafeMutablePointer<GstCaps>) { storage = Storage(adopting: gst_caps_ref(pointer)) }

  /// Parses caps in GStreamer's syntax (`gst-launch-1.0` capsfilter syntax), such as
  /// `video/x-raw, format=I420, width=640, height=480; image/jpeg`.
  ///
  /// The corresponding C function is `gst_caps_from_string`.
  /// - Throws: ``GStreamerError/capsParseFailed(_:)`` when the text is not valid caps.
  public init(_ string: String) throws(GStreamerError) {
    Gst.ensureInitialized()
    guard let pointer = gst_caps_from_string(string) else { throw .capsParseFailed(string) }
    self.init(adopting: pointer)
  }

  /// Caps with these structures, in order.
  public init(_ structures: [Structure]) {
    Gst.ensureInitialized()
    self.init(adopting: gst_caps_new_empty())
    for structure in structures { append(structure) }
  }

  /// Caps that match everything (`ANY`).
  public static var any: Caps {
    Gst.ensureInitialized()
    return Caps(adopting: gst_caps_new_any())
  }

  /// Caps that match nothing (`EMPTY`).
  public static var empty: Caps {
    Gst.ensureInitialized()
    return Caps(adopting: gst_caps_new_empty())
  }

  /// Calls `body` with the caps pointer, valid only inside the call.
  func withPointer<R>(_ body: (UnsafeMutablePointer<GstCaps>) throws -> R) rethrows -> R {
    try withExtendedLifetime(storage) { try body(storage.pointer) }
  }

  /// Calls `body` with the pointer of `caps`, or NULL when `caps` is nil.
  static func withPointer<R>(_ caps: Caps?, _ body: (UnsafeMutablePointer<GstCaps>?) throws -> R) rethrows -> R {
    guard let caps else { return try body(nil) }
    return try caps.withPointer { try body($0) }
  }

  /// Makes the caps uniquely owned and writable before a change.
  private mutating func makeWritable() {
    if !isKnownUniquelyReferenced(&storage) || gst_mini_object_is_writable(cgst_mini_object(storage.pointer)) == 0 {
      storage = Storage(adopting: gst_caps_copy(storage.pointer))
    }
  }

  // MARK: - Inspecting

  /// The number of structures.
  public var count: Int { Int(gst_caps_get_size(storage.pointer)) }

  /// Whether these are `ANY` caps.
  public var isAny: Bool { gst_caps_is_any(storage.pointer) != 0 }

  /// Whether these are `EMPTY` caps (no format at all).
  public var isEmpty: Bool { gst_caps_is_empty(storage.pointer) != 0 }

  /// Whether the caps describe exactly one format with no ranges or lists.
  public var isFixed: Bool { gst_caps_is_fixed(storage.pointer) != 0 }

  /// The structure at `index` (a copy: changing it does not change the caps).
  public func structure(at index: Int) -> Structure {
    precondition(index >= 0 && index < count, "structure index \(index) out of 0..<\(count)")
    return withPointer { Structure(copying: gst_caps_get_structure($0, guint(index))) }
  }

  /// Every structure, in order.
  public var structures: [Structure] { (0..<count).map(structure(at:)) }

  /// GStreamer's serialization, which ``init(_:)-(String)`` parses back.
  ///
  /// The corresponding C function is `gst_caps_to_string`.
  public var description: String {
    guard let text = gst_caps_to_string(storage.pointer) else { return "" }
    defer { g_free(text) }
    return String(cString: text)
  }

  /// Whether both describe the same set of formats.
  ///
  /// The corresponding C function is `gst_caps_is_equal`.
  public static func == (lhs: Caps, rhs: Caps) -> Bool {
    lhs.withPointer { l in rhs.withPointer { r in gst_caps_is_equal(l, r) != 0 } }
  }

  /// Whether every format of these caps is also in `other`.
  public func isSubset(of other: Caps) -> Bool {
    withPointer { l in other.withPointer { r in gst_caps_is_subset(l, r) != 0 } }
  }

  /// Whether the caps have a format in common with `other`.
  public func canIntersect(_ other: Caps) -> Bool {
    withPointer { l in other.withPointer { r in gst_caps_can_intersect(l, r) != 0 } }
  }

  // MARK: - Operations

  /// The formats both caps accept, in the order of these caps.
  ///
  /// The corresponding C function is `gst_caps_intersect`.
  public func intersection(_ other: Caps) -> Caps {
    withPointer { l in other.withPointer { r in Caps(adopting: gst_caps_intersect(l, r)) } }
  }

  /// One fixed format chosen from these caps: the first structure, each range and list at its
  /// nearest-to-default value (GStreamer's rules). Empty caps stay empty.
  ///
  /// The corresponding C function is `gst_caps_fixate`.
  public func fixated() -> Caps {
    if isEmpty || isAny { return self }
    return Caps(adopting: gst_caps_fixate(gst_caps_copy(storage.pointer)))
  }

  /// The same formats written with fewer structures.
  ///
  /// The corresponding C function is `gst_caps_simplify`.
  public func simplified() -> Caps {
    Caps(adopting: gst_caps_simplify(gst_caps_copy(storage.pointer)))
  }

  /// Appends a structure.
  ///
  /// The corresponding C function is `gst_caps_append_structure`.
  public mutating func append(_ structure: Structure) {
    makeWritable()
    gst_caps_append_structure(storage.pointer, structure.newCopy())
  }

  /// Sets a field in every structure.
  public mutating func setField(_ name: String, _ value: some ValueConvertible) throws(GStreamerError) {
    makeWritable()
    var gvalue = GValue()
    defer { g_value_unset(&gvalue) }
    do {
      try value.value.writeNatural(into: &gvalue)
    } catch {
      throw .capsParseFailed("field \(name) = \(value.value)")
    }
    gst_caps_set_value(storage.pointer, name, &gvalue)
  }
}

extension Caps: ValueConvertible {
  /// `.caps`.
  public var value: Value { .caps(self) }
  /// Reads `.caps`.
  public init?(value: Value) {
    guard case .caps(let caps) = value else { return nil }
    self = caps
  }
}

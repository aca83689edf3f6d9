internal import CGStreamer

/// A named set of typed fields: one format of ``Caps``, a message's payload, device properties.
///
/// A structure is a value: each `Structure` owns its own `GstStructure`.
/// The corresponding C type is `GstStructure`.
public struct Structure: Sendable, Equatable, CustomStringConvertible {
  /// Owns a `GstStructure` (structures are not reference counted in GStreamer).
  // Safety: the structure is only read through shared boxes and copied before any change.
  final class Storage: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<GstStructure>
    init(adopting pointer: UnsafeMutablePointer<GstStructure>) { self.pointer = pointer }
    deinit { gst_structure_free(pointer) }
  }

  private var storage: Storage

  /// Copies a borrowed structure.
  init(copying pointer: UnsafePointer<GstStructure>) { storage = Storage(adopting: gst_structure_copy(pointer)) }

  /// Adopts a structure the caller owns (transfer full).
  init(adopting pointer: UnsafeMutablePointer<GstStructure>) { storage = Storage(adopting: pointer) }

  /// An empty structure named `name`, such as `video/x-raw`.
  public init(name: String) {
    Gst.ensureInitialized()
    storage = Storage(adopting: gst_structure_new_empty(name))
  }

  /// An empty structure with `fields` set in order.
  /// - Throws: ``GStreamerError/capsParseFailed(_:)`` when a value cannot be stored in a field.
  public init(name: String, _ fields: KeyValuePairs<String, any ValueConvertible>) throws(GStreamerError) {
    self.init(name: name)
    for (key, value) in fields { try set(key, value.value) }
  }

  /// Parses a structure such as `video/x-raw, width=(int)640`.
  ///
  /// The corresponding C function is `gst_structure_from_string`.
  /// - Throws: ``GStreamerError/capsParseFailed(_:)`` when the text is not a valid structure.
  public init(_ string: String) throws(GStreamerError) {
    Gst.ensureInitialized()
    guard let pointer = gst_structure_from_string(string, nil) else { throw .capsParseFailed(string) }
    storage = Storage(adopting: pointer)
  }

  /// Calls `body` with the structure pointer, valid only inside the call.
  func withPointer<R>(_ body: (UnsafeMutablePointer<GstStructure>) throws -> R) rethrows -> R {
    try withExtendedLifetime(storage) { try body(storage.pointer) }
  }

  /// A copy the caller owns, for C calls that take ownership.
  func newCopy() -> UnsafeMutablePointer<GstStructure> { gst_structure_copy(storage.pointer) }

  private mutating func makeUnique() {
    if !isKnownUniquelyReferenced(&storage) { storage = Storage(adopting: gst_structure_copy(storage.pointer)) }
  }

  /// The structure's name, such as `video/x-raw`.
  public var name: String {
    get { String(cString: gst_structure_get_name(storage.pointer)) }
    set {
      makeUnique()
      gst_structure_set_name(storage.pointer, newValue)
    }
  }

  /// The field names, in order.
  public var fieldNames: [String] {
    (0..<gst_structure_n_fields(storage.pointer)).map {
      String(cString: gst_structure_nth_field_name(storage.pointer, guint($0)))
    }
  }

  /// Every field and its value, in order.
  public var fields: [(name: String, value: Value)] {
    fieldNames.compactMap { name in self[name].map { (name, $0) } }
  }

  /// Whether a field of this name exists.
  public func hasField(_ name: String) -> Bool { gst_structure_has_field(storage.pointer, name) != 0 }

  /// The value of a field, or nil when there is none.
  public subscript(_ field: String) -> Value? {
    withPointer { pointer in gst_structure_get_value(pointer, field).map { Value(reading: $0) } }
  }

  /// Removes a field; nothing happens when there is none.
  public mutating func removeField(_ field: String) {
    makeUnique()
    gst_structure_remove_field(storage.pointer, field)
  }

  /// The value of a field as `T`, or nil when the field is missing or of another type.
  public func get<T: ValueConvertible>(_ field: String, as type: T.Type = T.self) -> T? {
    self[field].flatMap { T(value: $0) }
  }

  /// Sets a field.
  /// - Throws: ``GStreamerError/capsParseFailed(_:)`` when the value cannot be stored (an unknown type, a zero denominator).
  public mutating func set(_ field: String, _ value: some ValueConvertible) throws(GStreamerError) {
    makeUnique()
    var gvalue = GValue()
    defer { g_value_unset(&gvalue) }
    do {
      try value.value.writeNatural(into: &gvalue)
    } catch {
      throw .capsParseFailed("\(name), \(field)=\(value.value)")
    }
    gst_structure_set_value(storage.pointer, field, &gvalue)
  }

  /// Sets a field to a buffer holding a copy of `bytes` (type `GstBuffer`), such as the
  /// `srtp-key` of SRTP caps. The structure's ``description`` shows them (as hex), as
  /// GStreamer's serialization does: do not log a structure that holds a secret.
  ///
  /// The corresponding C functions are `gst_buffer_new_memdup` and `gst_structure_set_value`.
  public mutating func set(_ field: String, bytes: [UInt8]) {
    makeUnique()
    var gvalue = GValue()
    g_value_init(&gvalue, gst_buffer_get_type())
    defer { g_value_unset(&gvalue) }
    Buffer(copying: bytes).withPointer { g_value_set_boxed(&gvalue, $0) }
    gst_structure_set_value(storage.pointer, field, &gvalue)
  }

  /// GStreamer's serialization, which ``init(_:)-(String)`` parses back.
  ///
  /// The corresponding C function is `gst_structure_to_string`.
  public var description: String {
    guard let text = gst_structure_to_string(storage.pointer) else { return "" }
    defer { g_free(text) }
    return String(cString: text)
  }

  /// Whether both have the same name and fields.
  public static func == (lhs: Structure, rhs: Structure) -> Bool {
    lhs.withPointer { l in rhs.withPointer { r in gst_structure_is_equal(l, r) != 0 } }
  }
}

extension Structure: ValueConvertible {
  /// `.structure`.
  public var value: Value { .structure(self) }
  /// Reads `.structure`.
  public init?(value: Value) {
    guard case .structure(let structure) = value else { return nil }
    self = structure
  }
}

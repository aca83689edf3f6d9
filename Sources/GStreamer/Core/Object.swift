internal import CGStreamer
internal import CGStreamerApp

// Safety: GstObject reference counting is atomic, and every accessor goes through GStreamer's
// thread-safe API (object lock or atomic fields), so instances may be shared across threads.
/// A GStreamer object (element, pad, bus, device…): one Swift reference owns one GStreamer reference.
///
/// Several Swift wrappers may stand for the same GStreamer object; they compare equal.
/// The corresponding C type is `GstObject`.
public class Object: @unchecked Sendable, Hashable, CustomStringConvertible {
  /// The owned reference.
  let objectPointer: UnsafeMutablePointer<GstObject>

  /// Takes a new reference to `pointer`, sinking it if it is floating (as `gst_element_factory_make` returns).
  required init(retaining pointer: UnsafeMutableRawPointer) {
    objectPointer = pointer.assumingMemoryBound(to: GstObject.self)
    gst_object_ref_sink(pointer)
  }

  /// Adopts a reference the caller already owns (transfer full). A floating one is sunk.
  required init(adopting pointer: UnsafeMutableRawPointer) {
    objectPointer = pointer.assumingMemoryBound(to: GstObject.self)
    if g_object_is_floating(pointer) != 0 { gst_object_ref_sink(pointer) }
  }

  deinit { gst_object_unref(objectPointer) }

  /// The raw pointer, for the module's own calls.
  var rawPointer: UnsafeMutableRawPointer { UnsafeMutableRawPointer(objectPointer) }

  /// The object's name, unique among its siblings.
  ///
  /// The corresponding C function is `gst_object_get_name`.
  public var name: String {
    guard let text = gst_object_get_name(objectPointer) else { return "" }
    defer { g_free(text) }
    return String(cString: text)
  }

  /// The full path from the top-level parent, such as `/GstPipeline:pipeline0/GstFakeSink:sink`.
  ///
  /// The corresponding C function is `gst_object_get_path_string`.
  public var path: String {
    guard let text = gst_object_get_path_string(objectPointer) else { return name }
    defer { g_free(text) }
    return String(cString: text)
  }

  /// The parent (the bin holding an element, the element holding a pad), if any.
  public var parent: Object? {
    gst_object_get_parent(objectPointer).map { Object.wrap(adopting: UnsafeMutableRawPointer($0)) }
  }

  /// The GObject type name, such as `GstVideoTestSrc`.
  public var typeName: String { String(cString: g_type_name(cgst_instance_type(rawPointer))) }

  /// Whether the object's type is, or derives from, `type`.
  func isA(_ type: GType) -> Bool { g_type_is_a(cgst_instance_type(rawPointer), type) != 0 }

  /// The number of references held to the GStreamer object, for tests of ownership.
  public var referenceCount: Int { Int(cgst_object_refcount(rawPointer)) }

  /// Two wrappers are equal when they stand for the same GStreamer object.
  public static func == (lhs: Object, rhs: Object) -> Bool { lhs.objectPointer == rhs.objectPointer }

  /// Hashes the GStreamer object's identity.
  public func hash(into hasher: inout Hasher) { hasher.combine(objectPointer) }

  /// `TypeName:name`.
  public var description: String { "\(typeName):\(name)" }

  // MARK: - Wrapping C objects in the most specific Swift class

  /// The Swift class for a GStreamer object, by its type: the most derived one this module has.
  private static func wrapperClass(for pointer: UnsafeMutableRawPointer) -> Object.Type {
    let type = cgst_instance_type(pointer)
    func isA(_ other: GType) -> Bool { g_type_is_a(type, other) != 0 }
    if isA(cgst_type_element()) {
      if isA(cgst_type_pipeline()) { return Pipeline.self }
      if isA(cgst_type_bin()) { return Bin.self }
      if isA(gst_app_src_get_type()) { return AppSrc.self }
      if isA(gst_app_sink_get_type()) { return AppSink.self }
      return Element.self
    }
    if isA(cgst_type_pad()) { return Pad.self }
    if isA(cgst_type_bus()) { return Bus.self }
    if isA(cgst_type_device()) { return Device.self }
    if isA(cgst_type_clock()) { return Clock.self }
    return Object.self
  }

  /// Wraps a borrowed object, taking a reference of its own.
  static func wrap(retaining pointer: UnsafeMutableRawPointer) -> Object {
    wrapperClass(for: pointer).init(retaining: pointer)
  }

  /// Wraps an object whose reference the caller passes on (transfer full).
  static func wrap(adopting pointer: UnsafeMutableRawPointer) -> Object {
    wrapperClass(for: pointer).init(adopting: pointer)
  }

}

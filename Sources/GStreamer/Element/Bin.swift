internal import CGStreamer

/// An element that holds other elements and manages their state together.
///
/// The corresponding C type is `GstBin`.
public class Bin: Element, @unchecked Sendable {
  var binPointer: UnsafeMutablePointer<GstBin> { rawPointer.assumingMemoryBound(to: GstBin.self) }

  /// A new, empty bin.
  ///
  /// The corresponding C function is `gst_bin_new`.
  public convenience init(name: String? = nil) {
    Gst.ensureInitialized()
    self.init(retaining: UnsafeMutableRawPointer(gst_bin_new(name)))
  }

  /// Adds elements; the bin takes a reference to each.
  ///
  /// The corresponding C function is `gst_bin_add`.
  /// - Throws: ``GStreamerError/binOperationFailed(bin:element:reason:)`` when an element already has
  ///   a parent or its name is taken in this bin.
  public func add(_ elements: Element...) throws(GStreamerError) { try add(elements) }

  /// Adds elements; the bin takes a reference to each.
  /// - Throws: as ``add(_:)-(Element...)``.
  public func add(_ elements: [Element]) throws(GStreamerError) {
    for element in elements {
      if let parent = element.parent {
        throw .binOperationFailed(bin: name, element: element.name, reason: "already in \(parent.name)")
      }
      if gst_bin_get_by_name(binPointer, element.name).map({ gst_object_unref(UnsafeMutableRawPointer($0)) }) != nil {
        throw .binOperationFailed(
          bin: name, element: element.name, reason: "an element of that name is already in the bin")
      }
      guard gst_bin_add(binPointer, element.elementPointer) != 0 else {
        throw .binOperationFailed(bin: name, element: element.name, reason: "the bin refused the element")
      }
    }
  }

  /// Removes an element (set it to ``Element/State/null`` afterwards to free its resources).
  ///
  /// The corresponding C function is `gst_bin_remove`.
  /// - Throws: ``GStreamerError/binOperationFailed(bin:element:reason:)`` when it is not in this bin.
  public func remove(_ element: Element) throws(GStreamerError) {
    guard gst_bin_remove(binPointer, element.elementPointer) != 0 else {
      throw .binOperationFailed(bin: name, element: element.name, reason: "not in this bin")
    }
  }

  /// Adds elements and links them in order: `try bin.addLinked(src, convert, sink)`.
  /// - Throws: the errors of ``add(_:)-(Element...)`` and ``Element/link(_:filter:)``.
  public func addLinked(_ elements: Element...) throws(GStreamerError) {
    try add(elements)
    for (source, sink) in zip(elements, elements.dropFirst()) { try source.link(sink) }
  }

  /// The element of this name in this bin or any bin inside it, or nil.
  ///
  /// The corresponding C function is `gst_bin_get_by_name`.
  public func element(named name: String) -> Element? {
    gst_bin_get_by_name(binPointer, name).map { Object.wrap(adopting: UnsafeMutableRawPointer($0)) as! Element }
  }

  /// The element of this name as `T` (`try pipeline.element(named: "sink", as: AppSink.self)`).
  /// - Throws: ``GStreamerError/noSuchElement(bin:name:)`` or
  ///   ``GStreamerError/wrongElementType(element:expected:actual:)``.
  public func element<T: Element>(named name: String, as type: T.Type) throws(GStreamerError) -> T {
    guard let element = element(named: name) else { throw .noSuchElement(bin: self.name, name: name) }
    guard let typed = element as? T else {
      throw .wrongElementType(element: name, expected: "\(T.self)", actual: element.typeName)
    }
    return typed
  }

  /// The elements directly in this bin.
  public var elements: [Element] {
    var result: [Element] = []
    let iterator = gst_bin_iterate_elements(binPointer)
    defer { gst_iterator_free(iterator) }
    var item = GValue()
    defer { g_value_unset(&item) }
    while true {
      switch gst_iterator_next(iterator, &item) {
      case GST_ITERATOR_OK:
        if let element = g_value_get_object(&item) { result.append(Object.wrap(retaining: element) as! Element) }
        g_value_reset(&item)
      case GST_ITERATOR_RESYNC:
        result.removeAll()
        gst_iterator_resync(iterator)
      default:
        return result
      }
    }
  }
}

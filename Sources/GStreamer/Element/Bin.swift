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

  /// Builds a bin from a `gst-launch-1.0` description of a chain, such as
  /// `videotestsrc ! jpegenc`; with `ghostUnlinkedPads`, the pads left unlinked at the ends become
  /// the bin's own pads, so the bin can be linked like one element.
  ///
  /// The corresponding C function is `gst_parse_bin_from_description_full`, with fatal errors.
  /// - Throws: the errors of ``Pipeline/init(parsing:)``.
  public convenience init(parsing description: String, ghostUnlinkedPads: Bool = true) throws(GStreamerError) {
    let element = try Gst.parse(description) { description, context, error in
      gst_parse_bin_from_description_full(
        description, ghostUnlinkedPads ? 1 : 0, context, GST_PARSE_FLAG_FATAL_ERRORS, &error)
    }
    self.init(adopting: element)
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

  /// Gives the bin a pad of its own, named `name`, that stands for `pad` of an element inside it
  /// (a ghost pad), so that the bin links as one element.
  ///
  /// The corresponding C functions are `gst_ghost_pad_new` and `gst_element_add_pad`.
  /// - Throws: ``GStreamerError/binOperationFailed(bin:element:reason:)`` when the pad cannot be
  ///   ghosted (it is not inside the bin) or the bin has a pad of that name already.
  public func addGhostPad(named name: String, for pad: Pad) throws(GStreamerError) {
    guard let ghost = gst_ghost_pad_new(name, pad.padPointer) else {
      throw .binOperationFailed(bin: self.name, element: pad.name, reason: "its pad cannot be ghosted")
    }
    guard gst_element_add_pad(elementPointer, ghost) != 0 else {
      // Not taken: the floating reference is still ours.
      gst_object_unref(UnsafeMutableRawPointer(gst_object_ref_sink(UnsafeMutableRawPointer(ghost))))
      throw .binOperationFailed(bin: self.name, element: pad.name, reason: "the bin has a pad named \(name) already")
    }
  }

  /// Every element inside the bin, and inside the bins inside it, depth first.
  public var allElements: [Element] { elements.flatMap { [$0] + (($0 as? Bin)?.allElements ?? []) } }

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

extension Gst {
  /// Runs one of GStreamer's parse functions and turns its failure into a typed error.
  /// - Returns: the element made, as the parse function returned it (a floating reference unless it is a pipeline).
  static func parse(
    _ description: String,
    _ parse: (String, OpaquePointer?, inout UnsafeMutablePointer<GError>?) -> UnsafeMutablePointer<GstElement>?
  ) throws(GStreamerError) -> UnsafeMutableRawPointer {
    Gst.ensureInitialized()
    var error: UnsafeMutablePointer<GError>?
    let context = gst_parse_context_new()
    defer { gst_parse_context_free(context) }
    let parsed = parse(description, context, &error)
    if let error {
      parsed.map { gst_object_unref(UnsafeMutableRawPointer($0)) }
      let missing = takeStrings(gst_parse_context_get_missing_elements(context))
      if error.pointee.code == GST_PARSE_ERROR_NO_SUCH_ELEMENT.rawValue, let factory = missing.first {
        g_error_free(error)
        throw .elementNotFound(factory: factory, package: PluginPackages.package(providing: factory))
      }
      throw .parseFailed(description: description, error: GLibError(consuming: error))
    }
    guard let parsed else {
      throw .parseFailed(
        description: description,
        error: GLibError(domain: "gst_parse_error", code: 0, message: "the description made no element"))
    }
    return UnsafeMutableRawPointer(parsed)
  }
}

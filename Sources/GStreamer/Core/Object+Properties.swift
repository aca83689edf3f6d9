internal import CGStreamer

// MARK: - Typed properties

extension Object {
  /// The property's spec, or an error naming the object and the property.
  fileprivate func propertySpec(_ property: String) throws(GStreamerError) -> UnsafeMutablePointer<GParamSpec> {
    guard let spec = cgst_find_property(rawPointer, property) else {
      throw .noSuchProperty(element: name, property: property)
    }
    return spec
  }

  /// Whether the object has a property of this name.
  public func hasProperty(_ property: String) -> Bool { cgst_find_property(rawPointer, property) != nil }

  /// The GType name of a property, such as `gint` or `GstVP8EncEndUsage`.
  /// - Throws: ``GStreamerError/noSuchProperty(element:property:)``.
  public func propertyTypeName(_ property: String) throws(GStreamerError) -> String {
    gTypeName(try propertySpec(property).pointee.value_type)
  }

  /// Reads a property as its own type.
  ///
  /// The corresponding C function is `g_object_get_property`.
  /// - Throws: ``GStreamerError/noSuchProperty(element:property:)``, or
  ///   ``GStreamerError/propertyNotAccessible(element:property:reason:)`` for a write-only property.
  public func property(_ property: String) throws(GStreamerError) -> Value {
    let spec = try propertySpec(property)
    guard spec.pointee.flags.rawValue & G_PARAM_READABLE.rawValue != 0 else {
      throw .propertyNotAccessible(element: name, property: property, reason: "cannot be read")
    }
    return Value(readingProperty: spec, of: objectPointer.withMemoryRebound(to: GObject.self, capacity: 1) { $0 })
  }

  /// Reads a property as `T`.
  /// - Throws: ``GStreamerError/propertyTypeMismatch(element:property:expected:given:)`` when the
  ///   property's value is not a `T`, and the errors of ``property(_:)``.
  public func get<T: ValueConvertible>(_ property: String, as type: T.Type = T.self) throws(GStreamerError) -> T {
    let value = try self.property(property)
    guard let typed = T(value: value) else {
      throw .propertyTypeMismatch(
        element: name, property: property, expected: try propertyTypeName(property), given: "\(T.self)")
    }
    return typed
  }

  /// Writes a property, checking the value's type and range against the property first.
  ///
  /// Integers of any width fit an integer property whose range holds them; a string or an
  /// ``Value/enumeration(_:)`` nick fits an enum property; nothing is converted silently.
  /// The corresponding C function is `g_object_set_property`.
  /// - Throws: ``GStreamerError/noSuchProperty(element:property:)``,
  ///   ``GStreamerError/propertyTypeMismatch(element:property:expected:given:)``,
  ///   ``GStreamerError/invalidPropertyValue(element:property:value:reason:)`` (out of range, unknown nick),
  ///   ``GStreamerError/propertyNotAccessible(element:property:reason:)`` (read-only, construct-only).
  public func set(_ property: String, _ value: some ValueConvertible) throws(GStreamerError) {
    let spec = try propertySpec(property)
    let value = value.value
    try checkWritable(spec, property)
    var gvalue = GValue()
    defer { g_value_unset(&gvalue) }
    do {
      try value.write(into: &gvalue, as: spec.pointee.value_type)
    } catch {
      switch error {
      case .typeMismatch:
        throw .propertyTypeMismatch(
          element: name, property: property, expected: gTypeName(spec.pointee.value_type), given: value.kindName)
      case .invalid(let reason):
        throw .invalidPropertyValue(element: name, property: property, value: value.description, reason: reason)
      }
    }
    try store(&gvalue, spec, property, shown: value.description)
  }

  /// Writes a property from text, as `gst-launch-1.0` reads `property=text`.
  ///
  /// The corresponding C function is `gst_value_deserialize`.
  /// - Throws: ``GStreamerError/invalidPropertyValue(element:property:value:reason:)`` when the text
  ///   does not parse as the property's type, and the errors of ``set(_:_:)``.
  public func set(_ property: String, fromString text: String) throws(GStreamerError) {
    let spec = try propertySpec(property)
    try checkWritable(spec, property)
    var gvalue = GValue()
    g_value_init(&gvalue, spec.pointee.value_type)
    defer { g_value_unset(&gvalue) }
    let parsed =
      spec.pointee.value_type == cgst_type_string()
      ? {
        g_value_set_string(&gvalue, text); return true
      }() : gst_value_deserialize(&gvalue, text) != 0
    guard parsed else {
      throw .invalidPropertyValue(
        element: name, property: property, value: text,
        reason: "not a valid \(gTypeName(spec.pointee.value_type))\(enumChoices(spec))")
    }
    try store(&gvalue, spec, property, shown: text)
  }

  fileprivate func checkWritable(_ spec: UnsafeMutablePointer<GParamSpec>, _ property: String) throws(GStreamerError) {
    let flags = spec.pointee.flags.rawValue
    guard flags & G_PARAM_WRITABLE.rawValue != 0 else {
      throw .propertyNotAccessible(element: name, property: property, reason: "is read-only")
    }
    guard flags & G_PARAM_CONSTRUCT_ONLY.rawValue == 0 else {
      throw .propertyNotAccessible(element: name, property: property, reason: "can only be set at construction")
    }
  }

  /// Validates `gvalue` against the spec's range and stores it.
  private func store(
    _ gvalue: UnsafeMutablePointer<GValue>, _ spec: UnsafeMutablePointer<GParamSpec>, _ property: String,
    shown: String
  ) throws(GStreamerError) {
    if g_param_value_validate(spec, gvalue) != 0 {
      throw .invalidPropertyValue(
        element: name, property: property, value: shown,
        reason: "outside the allowed range (the nearest allowed value is \(Value(reading: gvalue)))")
    }
    g_object_set_property(objectPointer.withMemoryRebound(to: GObject.self, capacity: 1) { $0 }, property, gvalue)
  }

  /// `: one of a, b, c` for enum properties, for error messages.
  private func enumChoices(_ spec: UnsafeMutablePointer<GParamSpec>) -> String {
    let type = spec.pointee.value_type
    guard cgst_type_fundamental(type) == cgst_type_enum() else { return "" }
    let enumClass = g_type_class_ref(type)!.assumingMemoryBound(to: GEnumClass.self)
    defer { g_type_class_unref(enumClass) }
    let nicks = (0..<Int(enumClass.pointee.n_values)).map { String(cString: enumClass.pointee.values[$0].value_nick) }
    return ": one of \(nicks.joined(separator: ", "))"
  }

  /// The names of every property the object has.
  public var propertyNames: [String] {
    var count: guint = 0
    let objectClass = UnsafeMutableRawPointer(
      rawPointer.assumingMemoryBound(to: GTypeInstance.self).pointee.g_class
    ).assumingMemoryBound(to: GObjectClass.self)
    guard let specs = g_object_class_list_properties(objectClass, &count) else { return [] }
    defer { g_free(specs) }
    return (0..<Int(count)).map { String(cString: specs[$0]!.pointee.name) }
  }
}

// MARK: - Properties that hold plain GObjects

extension Object {
  /// Writes property `property` of the object that property `holder` of this one holds: a
  /// plain GObject with no element of its own, such as `rtpsession`'s `internal-session`.
  ///
  /// The corresponding C functions are `g_object_get` and `g_object_set_property`.
  /// - Throws: ``GStreamerError/noSuchProperty(element:property:)`` when either property is
  ///   missing or `holder` holds nothing, and
  ///   ``GStreamerError/propertyTypeMismatch(element:property:expected:given:)`` for a value of
  ///   the wrong type.
  public func set(_ property: String, ofObjectIn holder: String, to value: some ValueConvertible)
    throws(GStreamerError)
  {
    try withObject(in: holder, property: property) { object, spec throws(GStreamerError) in
      var gvalue = GValue()
      defer { g_value_unset(&gvalue) }
      let value = value.value
      do {
        try value.write(into: &gvalue, as: spec.pointee.value_type)
      } catch {
        throw .propertyTypeMismatch(
          element: "\(name).\(holder)", property: property, expected: gTypeName(spec.pointee.value_type),
          given: value.kindName)
      }
      g_object_set_property(object, property, &gvalue)
    }
  }

  /// Reads property `property` of the plain GObject that property `holder` of this one holds,
  /// such as `rtpsession`'s `internal-session`'s `internal-ssrc`.
  ///
  /// The corresponding C functions are `g_object_get` and `g_object_get_property`.
  /// - Throws: ``GStreamerError/noSuchProperty(element:property:)`` when either property is
  ///   missing or `holder` holds nothing.
  public func property(_ property: String, ofObjectIn holder: String) throws(GStreamerError) -> Value {
    try withObject(in: holder, property: property) { object, spec in
      var gvalue = GValue()
      g_value_init(&gvalue, spec.pointee.value_type)
      defer { g_value_unset(&gvalue) }
      g_object_get_property(object, property, &gvalue)
      return Value(reading: &gvalue)
    }
  }

  /// Calls `body` with the object property `holder` holds and the spec of its `property`.
  private func withObject<T>(
    in holder: String, property: String,
    _ body: (UnsafeMutablePointer<GObject>, UnsafeMutablePointer<GParamSpec>) throws(GStreamerError) -> T
  ) throws(GStreamerError) -> T {
    guard let holderSpec = cgst_find_property(rawPointer, holder),
      g_type_is_a(holderSpec.pointee.value_type, cgst_type_object()) != 0
    else { throw .noSuchProperty(element: name, property: holder) }
    var held = GValue()
    g_value_init(&held, holderSpec.pointee.value_type)
    defer { g_value_unset(&held) }
    g_object_get_property(objectPointer.withMemoryRebound(to: GObject.self, capacity: 1) { $0 }, holder, &held)
    guard let object = g_value_get_object(&held), let spec = cgst_find_property(object, property) else {
      throw .noSuchProperty(element: "\(name).\(holder)", property: property)
    }
    return try body(object.assumingMemoryBound(to: GObject.self), spec)
  }

  /// Sets `property` to the object that property `source` of `other` holds: to share a plain
  /// GObject between elements, such as `rtpstorage`'s `internal-storage` with `rtpulpfecdec`'s
  /// `storage`.
  ///
  /// The corresponding C functions are `g_object_get_property` and `g_object_set_property`.
  /// - Throws: ``GStreamerError/noSuchProperty(element:property:)`` when either property is
  ///   missing, and ``GStreamerError/propertyTypeMismatch(element:property:expected:given:)``
  ///   when the object held is not of the type `property` takes.
  public func set(_ property: String, toObjectIn source: String, of other: Object) throws(GStreamerError) {
    let spec = try propertySpec(property)
    guard let sourceSpec = cgst_find_property(other.rawPointer, source) else {
      throw .noSuchProperty(element: other.name, property: source)
    }
    guard g_type_is_a(sourceSpec.pointee.value_type, spec.pointee.value_type) != 0 else {
      throw .propertyTypeMismatch(
        element: name, property: property, expected: gTypeName(spec.pointee.value_type),
        given: gTypeName(sourceSpec.pointee.value_type))
    }
    var gvalue = GValue()
    g_value_init(&gvalue, sourceSpec.pointee.value_type)
    defer { g_value_unset(&gvalue) }
    g_object_get_property(other.objectPointer.withMemoryRebound(to: GObject.self, capacity: 1) { $0 }, source, &gvalue)
    try checkWritable(spec, property)
    g_object_set_property(objectPointer.withMemoryRebound(to: GObject.self, capacity: 1) { $0 }, property, &gvalue)
  }
}

// MARK: - Properties that hold bytes

extension Object {
  /// Writes a property that holds a `GstBuffer` (bytes), such as `srtpenc`'s `key`, with a copy
  /// of `bytes`. The bytes never appear in an error: they are often a secret.
  ///
  /// The corresponding C functions are `gst_buffer_new_memdup` and `g_object_set_property`.
  /// - Throws: ``GStreamerError/noSuchProperty(element:property:)``,
  ///   ``GStreamerError/propertyTypeMismatch(element:property:expected:given:)`` when the
  ///   property does not hold a buffer, and
  ///   ``GStreamerError/propertyNotAccessible(element:property:reason:)`` (read-only, construct-only).
  public func set(_ property: String, bytes: [UInt8]) throws(GStreamerError) {
    let spec = try propertySpec(property)
    guard spec.pointee.value_type == gst_buffer_get_type() else {
      throw .propertyTypeMismatch(
        element: name, property: property, expected: gTypeName(spec.pointee.value_type), given: "bytes")
    }
    try checkWritable(spec, property)
    var gvalue = GValue()
    g_value_init(&gvalue, gst_buffer_get_type())
    defer { g_value_unset(&gvalue) }
    Buffer(copying: bytes).withPointer { g_value_set_boxed(&gvalue, $0) }
    g_object_set_property(objectPointer.withMemoryRebound(to: GObject.self, capacity: 1) { $0 }, property, &gvalue)
  }
}

extension Value {
  /// The value of the property `spec` of `object`, as its own type (`g_object_get_property`);
  /// for a wrapper's ``Object/property(_:)`` and for a `notify` handler, which has the object
  /// and the spec but no wrapper.
  init(readingProperty spec: UnsafeMutablePointer<GParamSpec>, of object: UnsafeMutablePointer<GObject>) {
    var gvalue = GValue()
    g_value_init(&gvalue, spec.pointee.value_type)
    defer { g_value_unset(&gvalue) }
    g_object_get_property(object, spec.pointee.name, &gvalue)
    self.init(reading: &gvalue)
  }
}

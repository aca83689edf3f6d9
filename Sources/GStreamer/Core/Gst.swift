internal import CGStreamer

/// Process-wide GStreamer: initialization, version, and the plugin registry.
///
/// Every entry point of this module initializes GStreamer on first use, so calling
/// ``initialize()`` yourself is only needed to see an initialization error early.
public enum Gst {
  /// The version of the GStreamer library loaded at run time.
  public struct Version: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The major version (1).
    public var major: Int
    /// The minor version (22 for 1.22.0).
    public var minor: Int
    /// The micro version.
    public var micro: Int
    /// The nano version: 0 for releases, 1 for git builds, 2 and up for pre-releases.
    public var nano: Int

    /// Creates a version from its parts.
    public init(major: Int, minor: Int, micro: Int, nano: Int = 0) {
      self.major = major
      self.minor = minor
      self.micro = micro
      self.nano = nano
    }

    /// Orders by major, minor, micro, then nano.
    public static func < (lhs: Version, rhs: Version) -> Bool {
      (lhs.major, lhs.minor, lhs.micro, lhs.nano) < (rhs.major, rhs.minor, rhs.micro, rhs.nano)
    }

    /// `major.minor.micro`, with `.nano` when it is not 0.
    public var description: String {
      nano == 0 ? "\(major).\(minor).\(micro)" : "\(major).\(minor).\(micro).\(nano)"
    }
  }

  /// The result of the one initialization of the process (Swift runs a global's initializer once, thread-safely).
  private static let initialization: Result<Void, GStreamerError> = {
    var error: UnsafeMutablePointer<GError>?
    if gst_init_check(nil, nil, &error) != 0 { return .success(()) }
    let glibError =
      error.map(GLibError.init(consuming:))
      ?? GLibError(domain: "gst-core-error-quark", code: 0, message: "gst_init_check failed")
    return .failure(.initializationFailed(glibError))
  }()

  /// Initializes GStreamer once for the process; later calls return at once. Safe from any thread.
  ///
  /// The corresponding C function is `gst_init_check`.
  /// - Throws: ``GStreamerError/initializationFailed(_:)`` with GLib's message.
  public static func initialize() throws(GStreamerError) {
    try initialization.get()
  }

  /// Initializes GStreamer, stopping the process with GStreamer's message if that is impossible
  /// (no usable registry, for instance): nothing in this module can work then.
  static func ensureInitialized() {
    if case .failure(let error) = initialization {
      fatalError("\(error)")
    }
  }

  /// Whether GStreamer has been initialized in this process.
  public static var isInitialized: Bool { gst_is_initialized() != 0 }

  /// The version of the GStreamer library in use.
  ///
  /// The corresponding C function is `gst_version`.
  public static var version: Version {
    var major: guint = 0
    var minor: guint = 0
    var micro: guint = 0
    var nano: guint = 0
    gst_version(&major, &minor, &micro, &nano)
    return Version(major: Int(major), minor: Int(minor), micro: Int(micro), nano: Int(nano))
  }

  /// GStreamer's own version string, such as `GStreamer 1.22.0`.
  public static var versionString: String {
    let text = gst_version_string()!
    defer { g_free(text) }
    return String(cString: text)
  }

  // MARK: - Registry

  /// Whether an element factory of this name is installed.
  ///
  /// The corresponding C function is `gst_element_factory_find`.
  public static func hasElement(_ factory: String) -> Bool {
    ensureInitialized()
    guard let found = gst_element_factory_find(factory) else { return false }
    gst_object_unref(UnsafeMutableRawPointer(found))
    return true
  }

  /// The names of every installed element factory.
  ///
  /// The corresponding C function is `gst_registry_get_feature_list`.
  public static func elementNames() -> [String] {
    ensureInitialized()
    let list = gst_registry_get_feature_list(gst_registry_get(), gst_element_factory_get_type())
    defer { gst_plugin_feature_list_free(list) }
    var names: [String] = []
    var node = list
    while let current = node {
      if let name = gst_object_get_name(current.pointee.data.assumingMemoryBound(to: GstObject.self)) {
        names.append(String(cString: name))
        g_free(name)
      }
      node = current.pointee.next
    }
    return names
  }

  /// Where an installed element factory comes from.
  public struct ElementInfo: Sendable, Hashable {
    /// The factory name, such as `vp8enc`.
    public var factory: String
    /// The plugin that provides it, such as `vpx`.
    public var plugin: String?
    /// The factory's long name.
    public var longName: String
    /// Its klass, such as `Codec/Encoder/Video`.
    public var klass: String
  }

  /// The factory of this name, or nil when no installed plugin provides it.
  public static func elementInfo(_ factory: String) -> ElementInfo? {
    ensureInitialized()
    guard let found = gst_element_factory_find(factory) else { return nil }
    defer { gst_object_unref(UnsafeMutableRawPointer(found)) }
    func metadata(_ key: String) -> String {
      gst_element_factory_get_metadata(found, key).map { String(cString: $0) } ?? ""
    }
    let plugin = gst_plugin_feature_get_plugin_name(found)
    return ElementInfo(
      factory: factory, plugin: plugin.map { String(cString: $0) },
      longName: metadata("long-name"), klass: metadata("klass"))
  }
}

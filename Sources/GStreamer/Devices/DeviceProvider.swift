internal import CGStreamer
import Synchronization

/// A device provider written in Swift: its devices appear in every ``DeviceMonitor`` whose
/// filters match, with hot-plug, exactly like the devices of GStreamer's own providers (V4L2,
/// PulseAudio…). Revue's virtual cameras are one.
///
/// The corresponding C type is a subclass of `GstDeviceProvider`, registered at run time.
public final class DeviceProvider: Sendable {
  /// One device the provider offers.
  public struct DeviceInfo: Sendable {
    /// Identifies the device within its provider (for ``DeviceProvider/remove(id:)``).
    public var id: String
    /// The name shown to users.
    public var displayName: String
    /// The device class, such as `Video/Source`.
    public var deviceClass: String
    /// The formats the device offers.
    public var caps: Caps
    /// Extra properties (`device.path`, `api`…), reported by ``Device/properties``.
    public var properties: Structure?
    /// Makes the element that reads the device, named `name` when given; nil when the device
    /// cannot be opened (it is busy, or gone).
    public var makeElement: @Sendable (_ name: String?) -> Element?

    /// A device description.
    public init(
      id: String, displayName: String, deviceClass: String, caps: Caps, properties: Structure? = nil,
      makeElement: @escaping @Sendable (_ name: String?) -> Element?
    ) {
      self.id = id
      self.displayName = displayName
      self.deviceClass = deviceClass
      self.caps = caps
      self.properties = properties
      self.makeElement = makeElement
    }
  }

  private struct State {
    var devices: [DeviceInfo] = []
    /// While a monitor runs the provider: the provider instance (borrowed: GStreamer keeps it
    /// while started) and the devices added to it (a reference of ours each, for their removal).
    var provider: GPointer?
    var added: [String: GPointer] = [:]
  }

  private let state = Mutex(State())
  /// The factory name the provider is registered under.
  public let name: String
  private let classes: String
  private let longName: String

  private static let registered = Mutex<[String: DeviceProvider]>([:])
  private static var quark: GQuark { DeviceProviderQuark.value }

  private init(name: String, longName: String, classes: String) {
    self.name = name
    self.longName = longName
    self.classes = classes
  }

  /// Registers a provider under `name`, offering `devices`.
  ///
  /// The corresponding C function is `gst_device_provider_register`.
  /// - Parameters:
  ///   - name: the factory name (unique in the process), such as `revuevirtualcameras`.
  ///   - classes: what the devices are, such as `Video/Source`: monitors filter on this.
  ///   - rank: the provider's rank; monitors use providers of rank 64 (marginal) and above.
  ///   - longName: the provider's name for people.
  ///   - devices: the devices it offers.
  /// - Throws: ``GStreamerError/binOperationFailed(bin:element:reason:)`` when the name is taken.
  public static func register(
    name: String, longName: String, classes: String, rank: UInt32 = 256, devices: [DeviceInfo] = []
  ) throws(GStreamerError) -> DeviceProvider {
    Gst.ensureInitialized()
    let provider = DeviceProvider(name: name, longName: longName, classes: classes)
    provider.state.withLock { $0.devices = devices }
    let added: Bool = registered.withLock { providers in
      guard providers[name] == nil, Gst.deviceProviderExists(name) == false else { return false }
      providers[name] = provider
      return true
    }
    guard added else {
      throw .binOperationFailed(bin: "device providers", element: name, reason: "a provider of that name exists")
    }
    let box = Unmanaged.passRetained(provider).toOpaque()  // Lives as long as the type: forever.
    var info = GTypeInfo()
    info.class_size = guint16(MemoryLayout<GstDeviceProviderClass>.size)
    info.class_init = Trampolines.deviceProviderClassInit
    info.class_data = UnsafeRawPointer(box)
    info.instance_size = guint16(MemoryLayout<GstDeviceProvider>.size)
    let typeName = "RevueDeviceProvider_" + name.map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
    let type = g_type_register_static(cgst_type_device_provider(), typeName, &info, GTypeFlags(rawValue: 0))
    g_type_set_qdata(type, quark, box)
    _ = gst_device_provider_register(nil, name, rank, type)
    return provider
  }

  /// The devices offered now.
  public var devices: [DeviceInfo] { state.withLock { $0.devices } }

  /// Adds a device (a camera plugged in): running monitors report it as added.
  public func add(_ device: DeviceInfo) {
    let provider = state.withLock { state in
      state.devices.removeAll { $0.id == device.id }
      state.devices.append(device)
      return state.provider
    }
    if let provider { publish(device, to: provider.raw) }
  }

  /// Removes a device (a camera unplugged): running monitors report it as removed.
  public func remove(id: String) {
    let (provider, gone) = state.withLock { state in
      state.devices.removeAll { $0.id == id }
      return (state.provider, state.added.removeValue(forKey: id))
    }
    guard let gone else { return }
    if let provider { Self.removeDevice(gone.raw, from: provider.raw) }
    gst_object_unref(gone.raw)
  }

  // MARK: - The GStreamer side

  /// The provider registered for the GType of `instance`.
  fileprivate static func of(_ instance: UnsafeMutableRawPointer) -> DeviceProvider {
    Unmanaged<DeviceProvider>.fromOpaque(g_type_get_qdata(cgst_instance_type(instance), quark)!)
      .takeUnretainedValue()
  }

  fileprivate func setMetadata(_ providerClass: UnsafeMutablePointer<GstDeviceProviderClass>) {
    // GStreamer copies the strings (the _static_ variant kept our strdup'd copies unreferenced:
    // LeakSanitizer found them).
    gst_device_provider_class_set_metadata(providerClass, longName, classes, "\(longName) (Swift)", "Revue")
  }

  /// A new floating `GstDevice` for `info`.
  private func makeDevice(_ info: DeviceInfo) -> UnsafeMutableRawPointer {
    let names: [String] = ["display-name", "device-class", "caps", "properties"]
    var values = [GValue](repeating: GValue(), count: 4)
    try? Value.string(info.displayName).write(into: &values[0], as: cgst_type_string())
    try? Value.string(info.deviceClass).write(into: &values[1], as: cgst_type_string())
    try? Value.caps(info.caps).write(into: &values[2], as: cgst_type_caps())
    try? (info.properties.map(Value.structure) ?? .null).write(into: &values[3], as: cgst_type_structure())
    defer { for index in values.indices { g_value_unset(&values[index]) } }
    let cNames = names.map { strdup($0) }
    defer { cNames.forEach { free($0) } }
    var namePointers = cNames.map { UnsafePointer<CChar>($0) }
    let device = g_object_new_with_properties(Trampolines.swiftDeviceType, 4, &namePointers, &values)!
    g_object_set_qdata_full(
      device, Self.quark, Unmanaged.passRetained(DeviceBox(info)).toOpaque(), Trampolines.releaseDeviceBox)
    return UnsafeMutableRawPointer(device)
  }

  /// Adds a device to a started provider, keeping a reference for its removal.
  private func publish(_ info: DeviceInfo, to provider: UnsafeMutableRawPointer) {
    let device = makeDevice(info)
    gst_object_ref(device)  // Ours, for the removal; the provider sinks the floating one.
    let previous = state.withLock { state in
      defer { state.added[info.id] = GPointer(device) }
      return state.added[info.id]
    }
    if let previous {
      Self.removeDevice(previous.raw, from: provider)
      gst_object_unref(previous.raw)
    }
    gst_device_provider_device_add(
      provider.assumingMemoryBound(to: GstDeviceProvider.self), device.assumingMemoryBound(to: GstDevice.self))
  }

  fileprivate func probe() -> UnsafeMutablePointer<GList>? {
    var list: UnsafeMutablePointer<GList>?
    for info in devices { list = g_list_append(list, makeDevice(info)) }
    return list
  }

  fileprivate func start(_ provider: UnsafeMutableRawPointer) {
    let current = state.withLock { state in
      state.provider = GPointer(provider)
      return state.devices
    }
    for info in current { publish(info, to: provider) }
  }

  fileprivate func stop(_ provider: UnsafeMutableRawPointer) {
    let added = state.withLock { state in
      state.provider = nil
      defer { state.added.removeAll() }
      return Array(state.added.values)
    }
    for device in added {
      Self.removeDevice(device.raw, from: provider)
      gst_object_unref(device.raw)
    }
  }

  private static func removeDevice(_ device: UnsafeMutableRawPointer, from provider: UnsafeMutableRawPointer) {
    gst_device_provider_device_remove(
      provider.assumingMemoryBound(to: GstDeviceProvider.self), device.assumingMemoryBound(to: GstDevice.self))
  }

  fileprivate static func info(of device: UnsafeMutableRawPointer) -> DeviceInfo? {
    g_object_get_qdata(device.assumingMemoryBound(to: GObject.self), quark).map {
      Unmanaged<DeviceBox>.fromOpaque($0).takeUnretainedValue().info
    }
  }
}

extension Gst {
  /// Whether a device provider factory of this name is registered.
  static func deviceProviderExists(_ name: String) -> Bool {
    guard let factory = gst_device_provider_factory_find(name) else { return false }
    gst_object_unref(UnsafeMutableRawPointer(factory))
    return true
  }
}

/// Holds a device's description on its `GstDevice`.
final class DeviceBox: Sendable {
  let info: DeviceProvider.DeviceInfo
  init(_ info: DeviceProvider.DeviceInfo) { self.info = info }
}

extension Trampolines {
  static let deviceProviderClassInit: GClassInitFunc = { providerClass, _ in
    let providerClass = providerClass!.assumingMemoryBound(to: GstDeviceProviderClass.self)
    providerClass.pointee.probe = { provider in DeviceProvider.of(UnsafeMutableRawPointer(provider!)).probe() }
    providerClass.pointee.start = { provider in
      DeviceProvider.of(UnsafeMutableRawPointer(provider!)).start(UnsafeMutableRawPointer(provider!))
      return 1
    }
    providerClass.pointee.stop = { provider in
      DeviceProvider.of(UnsafeMutableRawPointer(provider!)).stop(UnsafeMutableRawPointer(provider!))
    }
    // The class is initialized once, when GStreamer first makes the provider: its type's qdata is set by then.
    let type = (UnsafeMutableRawPointer(providerClass).assumingMemoryBound(to: GTypeClass.self)).pointee.g_type
    let provider = Unmanaged<DeviceProvider>.fromOpaque(g_type_get_qdata(type, DeviceProviderQuark.value)!)
      .takeUnretainedValue()
    provider.setMetadata(providerClass)
  }

  /// The GType of the devices of Swift providers, registered once.
  static let swiftDeviceType: GType = {
    var info = GTypeInfo()
    info.class_size = guint16(MemoryLayout<GstDeviceClass>.size)
    info.class_init = { deviceClass, _ in
      deviceClass!.assumingMemoryBound(to: GstDeviceClass.self).pointee.create_element = { device, name in
        guard let info = DeviceProvider.info(of: UnsafeMutableRawPointer(device!)),
          let element = info.makeElement(name.map { String(cString: $0) })
        else { return nil }
        // GStreamer expects a floating reference to a new element.
        gst_object_ref(element.rawPointer)
        g_object_force_floating(element.rawPointer.assumingMemoryBound(to: GObject.self))
        return element.elementPointer
      }
    }
    info.instance_size = guint16(MemoryLayout<GstDevice>.size)
    return g_type_register_static(cgst_type_device(), "RevueSwiftDevice", &info, GTypeFlags(rawValue: 0))
  }()

  static let releaseDeviceBox: GDestroyNotify = { box in Unmanaged<DeviceBox>.fromOpaque(box!).release() }
}

/// The quark under which a provider's GType keeps its Swift object.
enum DeviceProviderQuark {
  static let value = g_quark_from_static_string("revue-device-provider")
}

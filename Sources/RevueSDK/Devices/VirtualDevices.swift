import Foundation
import GStreamer
import Synchronization

/// Virtual cameras and microphones: GStreamer devices of Revue's own, listed by the device
/// monitor exactly like V4L2 cameras and PulseAudio microphones, for machines without a camera,
/// for tests and for the demo.
///
/// A virtual camera reports the formats of a ``CameraProfile`` and produces exactly the caps
/// the capturer asks for: `videotestsrc`, plus `jpegenc` for `image/jpeg` and an H.264 encoder
/// for `video/x-h264`, so the camera code path runs end to end. It can be unplugged, plugged
/// back and made busy.
///
/// Enable them with the environment variable `REVUE_VIRTUAL_CAMERAS` (profile names or `.caps`
/// paths, comma-separated; `all` for every shipped profile) and ``enableFromEnvironment()``,
/// or with ``addCamera(_:)``.
public enum VirtualDevices {
  /// The signal of a virtual microphone.
  public enum Signal: Sendable, Hashable {
    /// A sine tone of `frequency` hertz.
    case sine(frequency: Double)
    /// Pink noise, with the spectrum of speech more than of a tone.
    case noise
    /// The lip-sync test signal: silence, with a 1 kHz beep of 50 ms once a second at the
    /// instant the virtual cameras flash white (they flash while such a microphone runs).
    case sync
  }

  private struct Entry {
    var info: DeviceProvider.DeviceInfo
    var isPlugged = true
    var isBusy = false
    /// Refuses access when opened, as a device without permission does.
    var isDenied = false
    /// Opens but gives nothing, as a camera whose driver hangs.
    var isStalled = false
    var opens = 0
    /// Counts unplugs: an element opened before the last unplug reads nothing.
    var epoch = 0
  }

  private static let entries = Mutex<[String: Entry]>([:])

  private static let cameraProvider: DeviceProvider? = register(
    name: "revuevirtualcameras", longName: "Revue virtual cameras", classes: "Video/Source")
  private static let microphoneProvider: DeviceProvider? = register(
    name: "revuevirtualmicrophones", longName: "Revue virtual microphones", classes: "Audio/Source")

  private static func register(name: String, longName: String, classes: String) -> DeviceProvider? {
    do {
      return try DeviceProvider.register(name: name, longName: longName, classes: classes)
    } catch {
      RevueLog.log(.error, "VirtualDevices", "cannot register the \(longName) provider: \(error)")
      return nil
    }
  }

  /// Registers the providers (once), before a device monitor starts: monitors only use the
  /// providers registered when they start.
  static func registerProviders() {
    _ = cameraProvider
    _ = microphoneProvider
  }

  /// The caps a capturer asks a device for while it makes the device's element.
  @TaskLocal static var requestedCaps: Caps?

  /// Adds the cameras named by `REVUE_VIRTUAL_CAMERAS`, when it is set.
  /// - Returns: the ids of the cameras added (empty when the variable is not set).
  /// - Throws: ``RevueError`` naming a profile that does not exist or is malformed.
  @discardableResult
  public static func enableFromEnvironment() throws(RevueError) -> [String] {
    guard let value = ProcessInfo.processInfo.environment["REVUE_VIRTUAL_CAMERAS"], !value.isEmpty else { return [] }
    return try addCameras(value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
  }

  /// The profile of the virtual camera used when a machine has none: a common USB 2.0 webcam.
  public static let defaultProfile = "usb-720p-webcam"

  /// The first colour camera of the machine; when it has none, the virtual camera of
  /// ``defaultProfile`` (added now, and said so in the log).
  /// - Returns: the camera, and whether it is virtual.
  public static func cameraOrVirtual() async throws -> (device: CaptureDevice, isVirtual: Bool) {
    if let camera = CameraCapturer.camera(facing: .unspecified, strictly: false) {
      return (camera, isVirtual(camera))
    }
    let device = try await camera(profile: defaultProfile)
    RevueLog.log(.info, "VirtualDevices", "no camera on this machine: using the virtual camera \(defaultProfile)")
    return (device, true)
  }

  /// The first microphone of the machine; when it has none, a virtual one of the sync signal
  /// (a beep once a second, as the virtual cameras flash).
  /// - Returns: the microphone, and whether it is virtual.
  public static func microphoneOrVirtual() async throws -> (device: CaptureDevice, isVirtual: Bool) {
    if let microphone = DeviceWatcher.shared.all.first(where: { $0.kind == .microphone }) {
      return (microphone, isVirtual(microphone))
    }
    return (try await microphone(signal: .sync), true)
  }

  /// Whether `device` is one of these virtual devices.
  public static func isVirtual(_ device: CaptureDevice) -> Bool {
    device.id.hasPrefix("virtual:") || device.id.hasPrefix("virtual-mic:")
  }

  /// Adds a virtual microphone (as ``addMicrophone(name:signal:)``) and waits until the device
  /// monitor lists it.
  public static func microphone(name: String = "Virtual Microphone", signal: Signal = .sine(frequency: 440))
    async throws -> CaptureDevice
  {
    try await listed(.microphone, "the virtual microphone \(name)") { addMicrophone(name: name, signal: signal) }
  }

  /// Adds the virtual camera of a profile (a shipped name or a `.caps` path) and waits until
  /// the device monitor lists it.
  /// - Throws: ``RevueError`` naming a profile that does not exist or is malformed.
  public static func camera(profile: String) async throws -> CaptureDevice {
    let camera = try CameraProfile.named(profile)
    return try await listed(.camera, "the virtual camera \(profile)") { addCamera(camera) }
  }

  /// Adds a device with `add` (which returns its id) and waits until the device monitor lists it.
  private static func listed(_ kind: CaptureDevice.Kind, _ what: String, add: () -> String) async throws
    -> CaptureDevice
  {
    let events = DeviceWatcher.shared.events()
    let id = add()
    if let device = DeviceWatcher.shared.device(id: id, kind: kind) { return device }
    for await event in events {
      if case .added(let device) = event, device.id == id { return device }
    }
    throw RevueError(.invalidState, "\(what) did not appear")
  }

  /// Adds a virtual camera for each profile name or `.caps` path; `all` adds every shipped profile.
  /// - Returns: the ids of the cameras added.
  /// - Throws: ``RevueError`` naming a profile that does not exist or is malformed; none is added then.
  @discardableResult
  public static func addCameras(_ names: [String]) throws(RevueError) -> [String] {
    let expanded = names.flatMap { $0 == "all" ? CameraProfile.shippedNames : [$0] }
    var profiles: [CameraProfile] = []
    for name in expanded { profiles.append(try CameraProfile.named(name)) }
    return profiles.map(addCamera)
  }

  /// Adds (or replaces) the virtual camera of `profile`.
  /// - Returns: its device id, `virtual:PROFILE`.
  @discardableResult
  public static func addCamera(_ profile: CameraProfile) -> String {
    let id = "virtual:\(profile.profileName)"
    var properties = try? Structure(
      name: "properties",
      [
        "revue.id": id, "revue.position": profile.position.rawValue, "device.bus": profile.bus,
        "device.api": "revue-virtual", "device.path": "/dev/virtual/\(profile.profileName)",
      ])
    if let zoom = profile.zoomRange {
      try? properties?.set("revue.zoom-min", zoom.lowerBound)
      try? properties?.set("revue.zoom-max", zoom.upperBound)
    }
    let info = DeviceProvider.DeviceInfo(
      id: id, displayName: profile.name, deviceClass: "Video/Source", caps: profile.caps, properties: properties
    ) { name in
      guard let epoch = begin(opening: id),
        let source = makeCameraSource(caps: requestedCaps ?? profile.caps, name: name, zooms: profile.zoomRange != nil)
      else { return nil }
      failWhenUnplugged(source, id: id, epoch: epoch)
      return source
    }
    add(info, to: cameraProvider)
    return id
  }

  /// Adds (or replaces) a virtual microphone.
  /// - Returns: its device id, `virtual-mic:NAME`.
  @discardableResult
  public static func addMicrophone(name: String = "Virtual Microphone", signal: Signal = .sine(frequency: 440))
    -> String
  {
    let id = "virtual-mic:\(name.lowercased().replacingOccurrences(of: " ", with: "-"))"
    let properties = try? Structure(name: "properties", ["revue.id": id, "device.api": "revue-virtual"])
    let caps = (try? Caps("audio/x-raw, format=S16LE, rate=48000, channels=[ 1, 2 ], layout=interleaved")) ?? .any
    let info = DeviceProvider.DeviceInfo(
      id: id, displayName: name, deviceClass: "Audio/Source", caps: caps, properties: properties
    ) { elementName in
      guard let epoch = begin(opening: id) else { return nil }
      let wave =
        switch signal {
        case .sine(let frequency): "wave=sine freq=\(frequency) volume=0.5"
        case .noise: "wave=pink-noise volume=0.3"
        case .sync: "wave=silence"
        }
      let source = try? Bin(parsing: "audiotestsrc name=tone is-live=true \(wave) samplesperbuffer=480")
      guard let source else { return nil }
      if signal == .sync, let tone = source.element(named: "tone") { SyncSignal.attachBeep(to: tone) }
      if let elementName { try? source.set("name", elementName) }
      failWhenUnplugged(source, id: id, epoch: epoch)
      return source
    }
    add(info, to: microphoneProvider)
    return id
  }

  private static func add(_ info: DeviceProvider.DeviceInfo, to provider: DeviceProvider?) {
    entries.withLock { $0[info.id] = Entry(info: info) }
    provider?.add(info)
  }

  /// Removes a virtual device for good.
  public static func remove(_ id: String) {
    unplug(id)
    entries.withLock { _ = $0.removeValue(forKey: id) }
  }

  /// Unplugs a virtual device: the monitor reports it removed, and elements reading it stop with
  /// an error, as a V4L2 camera's do.
  public static func unplug(_ id: String) {
    guard
      let entry = entries.withLock({ entries -> Entry? in
        guard entries[id]?.isPlugged == true else { return nil }
        entries[id]?.isPlugged = false
        entries[id]?.epoch += 1
        return entries[id]
      })
    else { return }
    provider(for: entry.info)?.remove(id: id)
  }

  /// Plugs a virtual device back: the monitor reports it added, with the same id.
  public static func replug(_ id: String) {
    guard
      let entry = entries.withLock({ entries -> Entry? in
        guard entries[id]?.isPlugged == false else { return nil }
        entries[id]?.isPlugged = true
        return entries[id]
      })
    else { return }
    provider(for: entry.info)?.add(entry.info)
  }

  /// Makes a virtual device busy (as when another application uses it) or free again: a busy
  /// device stays listed but cannot be opened.
  public static func setBusy(_ id: String, _ isBusy: Bool) {
    entries.withLock { $0[id]?.isBusy = isBusy }
  }

  /// Makes a virtual device refuse access or accept it again: a denied device opens, then fails
  /// before its first buffer with `EACCES`, as v4l2src reports a `/dev/video*` the user may not
  /// read ("Permission denied").
  public static func setDenied(_ id: String, _ isDenied: Bool) {
    entries.withLock { $0[id]?.isDenied = isDenied }
  }

  /// Makes a virtual device hang or work again: a stalled device opens and gives no buffer.
  public static func setStalled(_ id: String, _ isStalled: Bool) {
    entries.withLock { $0[id]?.isStalled = isStalled }
  }

  /// How many times the device was opened (its element made) since it was added.
  public static func openCount(_ id: String) -> Int { entries.withLock { $0[id]?.opens ?? 0 } }

  private static func provider(for info: DeviceProvider.DeviceInfo) -> DeviceProvider? {
    info.deviceClass == "Video/Source" ? cameraProvider : microphoneProvider
  }

  /// Counts an open.
  /// - Returns: the device's epoch, or nil when it is busy or unplugged.
  private static func begin(opening id: String) -> Int? {
    entries.withLock { entries in
      guard let entry = entries[id], entry.isPlugged, !entry.isBusy else { return nil }
      entries[id]?.opens += 1
      return entry.epoch
    }
  }

  /// Makes `source` stop with a read error, as a V4L2 device's element does, once the device
  /// is unplugged; a device denied when it was opened fails at once with `EACCES`, and one
  /// stalled then gives nothing.
  private static func failWhenUnplugged(_ source: Element, id: String, epoch: Int) {
    guard let pad = source.staticPad("src") else { return }
    if entries.withLock({ $0[id]?.isStalled == true }) {
      pad.addProbe(.buffer) { _, _ in .drop }
      return
    }
    if entries.withLock({ $0[id]?.isDenied == true }) {
      pad.addProbe(.buffer) { pad, _ in
        pad.parentElement?.postError(
          "Could not open device '\(id)' for reading and writing.", debug: "system error: Permission denied")
        return .drop
      }
      return
    }
    pad.addProbe(.buffer) { pad, _ in
      let name = entries.withLock { entries in entries[id]?.epoch == epoch ? nil : entries[id]?.info.displayName ?? id }
      guard let name else { return .ok }
      pad.parentElement?.postError("Could not read from resource: the device \(name) was unplugged")
      return .drop
    }
  }

  /// Frames a virtual camera has in its pool from its start, as a V4L2 camera has its buffers
  /// (four, v4l2src's usual count): about two frames more than a pool that grows holds in a
  /// quiet run, and as many as a busy one reaches.
  static let poolFrames = 4

  /// Makes `source` (a `videotestsrc`) fill its frame pool at once: its first ``poolFrames``
  /// frames are kept until the last of them is made. A pool grows by a frame the first time the
  /// frames in flight reach a new high (an encoder that falls behind, maybe hours in) and never
  /// shrinks; filled from the start, its memory is what the camera holds all along, as a V4L2
  /// camera's fixed buffers are, and a long run does not step up later.
  private static func fillPool(of source: Element) {
    guard let pad = source.staticPad("src") else { return }
    let kept = Locked<[Buffer]>([])
    pad.addProbe(.buffer) { _, info in
      guard let buffer = info.buffer else { return .ok }
      let full = kept.value.withLock { kept in
        kept.append(buffer)
        return kept.count == poolFrames
      }
      if full { kept.value.withLock { $0.removeAll() } }
      return full ? .remove : .ok
    }
  }

  /// The chain that produces `caps` (fixated): a test pattern, encoded when the caps are; with a
  /// zoom (`zooms`), the picture goes through a crop (`videocrop` named `zoom`, no crop at first)
  /// and is scaled back to its size.
  private static func makeCameraSource(caps: Caps, name: String?, zooms: Bool) -> Element? {
    let fixed = caps.fixated()
    guard !fixed.isEmpty, !fixed.isAny else { return nil }
    let structure = fixed.structure(at: 0)
    do {
      let source = try Bin(parsing: cameraChain(for: structure, zooms: zooms))
      if let name { try source.set("name", name) }
      try source.element(named: "virtualcaps")?.set("caps", fixed)
      try source.element(named: "zoomcaps")?.set("caps", fixed)
      if let pattern = source.element(named: "pattern") {
        SyncSignal.attachFlash(to: pattern)
        fillPool(of: pattern)
      }
      return source
    } catch {
      RevueLog.log(.error, "VirtualDevices", "cannot make a virtual camera for \(fixed): \(error)")
      return nil
    }
  }

  /// The gst-launch description of a virtual camera's chain for caps `structure`, ending in a
  /// capsfilter named `virtualcaps` (to be set to the caps); with `zooms`, a crop named `zoom`
  /// between the pattern (of the caps' size, its capsfilter `zoomcaps` set to raw caps) and a
  /// scaler.
  static func cameraChain(for structure: Structure, zooms: Bool = false) -> String {
    var raw = "video/x-raw,format=I420"
    for field in ["width", "height", "framerate"] {
      if let value = structure[field] { raw += ",\(field)=\(value)" }
    }
    let pattern = "videotestsrc name=pattern is-live=true"
    let source =
      !zooms
      ? pattern
      : structure.name == "video/x-raw"
        ? "\(pattern) ! capsfilter name=zoomcaps ! videocrop name=zoom ! videoscale"
        : "\(pattern) ! \(raw) ! videocrop name=zoom ! videoscale"
    guard structure.name != "video/x-raw" else { return "\(source) ! capsfilter name=virtualcaps" }
    let encoder =
      structure.name == "image/jpeg"
      ? "jpegenc"
      : Gst.hasElement("x264enc")
        ? "x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30" : "openh264enc complexity=low"
    return "\(source) ! \(raw) ! \(encoder) ! capsfilter name=virtualcaps"
  }
}

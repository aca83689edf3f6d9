import GStreamer
import Synchronization

/// A camera or microphone appearing or going away.
public enum DeviceEvent: Sendable, Hashable {
  /// A device was plugged in (or a virtual one added).
  case added(CaptureDevice)
  /// A device was unplugged.
  case removed(CaptureDevice)
}

/// The process's one device monitor over cameras and microphones: the current list, and the
/// changes as they come. Started the first time anything asks for devices.
final class DeviceWatcher: Sendable {
  static let shared = DeviceWatcher()

  private let monitor: DeviceMonitor
  private let devices = Mutex<[CaptureDevice]>([])
  private let broadcast = Broadcast<DeviceEvent>()

  private init() {
    VirtualDevices.registerProviders()
    do {
      try VirtualDevices.enableFromEnvironment()
    } catch {
      RevueLog.log(.error, "Devices", "REVUE_VIRTUAL_CAMERAS: \(error)")
    }
    monitor = DeviceMonitor()
    monitor.addFilter(classes: "Video/Source")
    monitor.addFilter(classes: "Audio/Source")
    let events = monitor.events()
    do {
      try monitor.start()
    } catch {
      RevueLog.log(.warning, "Devices", "the device monitor did not start: no hot-plug events (\(error))")
    }
    devices.withLock { $0 = Self.unique(monitor.devices.map(CaptureDevice.init)) }
    Task { [weak self] in
      for await event in events {
        guard let self else { return }
        self.handle(event)
      }
    }
  }

  deinit { monitor.stop() }

  /// The devices present now.
  var all: [CaptureDevice] { devices.withLock { $0 } }

  /// The device of `id` present now, if any.
  func device(id: String, kind: CaptureDevice.Kind) -> CaptureDevice? {
    all.first { $0.id == id && $0.kind == kind }
  }

  /// Devices added and removed from now on.
  func events() -> AsyncStream<DeviceEvent> { broadcast.subscribe() }

  private func handle(_ event: DeviceMonitor.Event) {
    switch event {
    case .added(let device):
      let added = CaptureDevice(device)
      devices.withLock { list in
        list.removeAll { $0 == added }
        list.append(added)
      }
      broadcast.send(.added(added))
    case .removed(let device):
      let removed = CaptureDevice(device)
      devices.withLock { list in list.removeAll { $0 == removed } }
      broadcast.send(.removed(removed))
    case .changed(let device, _):
      let changed = CaptureDevice(device)
      devices.withLock { list in
        if let index = list.firstIndex(of: changed) { list[index] = changed } else { list.append(changed) }
      }
    }
  }

  private static func unique(_ devices: [CaptureDevice]) -> [CaptureDevice] {
    var seen = Set<CaptureDevice>()
    return devices.filter { seen.insert($0).inserted }
  }
}

internal import CGStreamer

/// Lists devices of some classes and reports them as they come and go (hot-plug).
///
/// The corresponding C type is `GstDeviceMonitor`.
public final class DeviceMonitor: Object, @unchecked Sendable {
  var monitorPointer: UnsafeMutablePointer<GstDeviceMonitor> {
    rawPointer.assumingMemoryBound(to: GstDeviceMonitor.self)
  }

  /// A device appearing, going away or changing.
  public enum Event: Sendable {
    /// A device appeared.
    case added(Device)
    /// A device went away.
    case removed(Device)
    /// A device changed: its new and old descriptions.
    case changed(Device, old: Device)
  }

  /// A monitor with no filters yet (with none, ``start()`` watches every device).
  ///
  /// Its bus is dispatched from now on, so that ``events()`` misses nothing posted before it is called.
  /// The corresponding C function is `gst_device_monitor_new`.
  public convenience init() {
    Gst.ensureInitialized()
    self.init(adopting: UnsafeMutableRawPointer(gst_device_monitor_new()))
    let bus = gst_device_monitor_get_bus(monitorPointer)!
    defer { gst_object_unref(UnsafeMutableRawPointer(bus)) }
    BusDispatcher.attach(to: bus)
  }

  /// Watches devices whose class contains `classes` (such as `Video/Source`) and, when given, that offer `caps`.
  ///
  /// The corresponding C function is `gst_device_monitor_add_filter`.
  /// - Returns: the filter's id, for ``removeFilter(_:)``.
  @discardableResult
  public func addFilter(classes: String?, caps: Caps? = nil) -> UInt32 {
    Caps.withPointer(caps) { gst_device_monitor_add_filter(monitorPointer, classes, $0) }
  }

  /// Removes a filter.
  @discardableResult
  public func removeFilter(_ id: UInt32) -> Bool { gst_device_monitor_remove_filter(monitorPointer, id) != 0 }

  /// Starts watching: probes the providers, then reports changes through ``events()``.
  ///
  /// The corresponding C function is `gst_device_monitor_start`.
  /// - Throws: ``GStreamerError/stateChangeFailed(element:target:error:)`` when no provider could start.
  public func start() throws(GStreamerError) {
    guard gst_device_monitor_start(monitorPointer) != 0 else {
      throw .stateChangeFailed(element: "device monitor", target: .playing, error: nil)
    }
  }

  /// Stops watching.
  public func stop() { gst_device_monitor_stop(monitorPointer) }

  /// The devices that match the filters now (probing the providers when the monitor is not started).
  ///
  /// The corresponding C function is `gst_device_monitor_get_devices`.
  public var devices: [Device] {
    var result: [Device] = []
    var node = gst_device_monitor_get_devices(monitorPointer)
    let list = node
    while let current = node {
      result.append(Device(adopting: current.pointee.data))
      node = current.pointee.next
    }
    g_list_free(list)
    return result
  }

  /// The names of the device providers the monitor uses.
  public var providers: [String] { takeStrings(gst_device_monitor_get_providers(monitorPointer)) }

  /// Devices added, removed and changed while the monitor runs, in order.
  /// The stream ends when the monitor is destroyed or the consumer stops iterating.
  public func events() -> AsyncStream<Event> {
    let bus = Bus(adopting: UnsafeMutableRawPointer(gst_device_monitor_get_bus(monitorPointer)!))
    let messages = bus.messages([.deviceAdded, .deviceRemoved, .deviceChanged])
    return AsyncStream { continuation in
      let task = Task {
        for await message in messages {
          switch message.kind {
          case .deviceAdded(let device): continuation.yield(.added(device))
          case .deviceRemoved(let device): continuation.yield(.removed(device))
          case .deviceChanged(let device, let old): continuation.yield(.changed(device, old: old))
          default: break
          }
        }
        continuation.finish()
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }
}

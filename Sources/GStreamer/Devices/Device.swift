internal import CGStreamer

/// A capture or playback device (a camera, a microphone…) as a device provider reports it.
///
/// The corresponding C type is `GstDevice`.
public final class Device: Object, @unchecked Sendable {
  var devicePointer: UnsafeMutablePointer<GstDevice> { rawPointer.assumingMemoryBound(to: GstDevice.self) }

  /// The name to show, such as `USB 720p Webcam`.
  public var displayName: String {
    guard let text = gst_device_get_display_name(devicePointer) else { return "" }
    defer { g_free(text) }
    return String(cString: text)
  }

  /// The device class, such as `Video/Source`.
  public var deviceClass: String {
    guard let text = gst_device_get_device_class(devicePointer) else { return "" }
    defer { g_free(text) }
    return String(cString: text)
  }

  /// The formats the device offers, nil when it does not say.
  public var caps: Caps? { gst_device_get_caps(devicePointer).map { Caps(adopting: $0) } }

  /// The provider's properties of the device (such as `device.path` or `api.v4l2.path`).
  public var properties: Structure? { gst_device_get_properties(devicePointer).map { Structure(adopting: $0) } }

  /// Whether the device class contains each of `classes` (`"Video/Source"` matches `Video/Source`).
  public func hasClasses(_ classes: String) -> Bool { gst_device_has_classes(devicePointer, classes) != 0 }

  /// Makes the source or sink element that reads or writes the device.
  ///
  /// The corresponding C function is `gst_device_create_element`.
  /// - Throws: ``GStreamerError/elementNotFound(factory:package:)`` when the provider cannot make one.
  public func createElement(name: String? = nil) throws(GStreamerError) -> Element {
    guard let element = gst_device_create_element(devicePointer, name) else {
      throw .elementNotFound(factory: "element for device '\(displayName)'", package: nil)
    }
    return Object.wrap(retaining: UnsafeMutableRawPointer(element)) as! Element
  }
}

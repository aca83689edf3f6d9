import CV4L2
import GStreamer
import Glibc

/// A camera's own zoom: the optical or sensor zoom that changes the picture the camera sends,
/// so that receivers see it too (seed 001's pinch to zoom, without the pinch). A real camera's
/// is V4L2's `zoom_absolute` control, in the camera's units (many UVC webcams go from 100, no
/// zoom, to 500, five times); a virtual camera's profile can declare one (`zoom: 100-500`),
/// which crops the centre of its picture and scales it back up.
struct CameraZoom: Sendable, Hashable {
  /// The values the camera takes, the first one no zoom.
  let range: ClosedRange<Int>
  /// The V4L2 device node whose control it is; nil for a virtual camera.
  let devicePath: String?

  /// The zoom of the V4L2 device at `path`; nil when it has none (or cannot be opened).
  init?(v4l2DeviceAt path: String) {
    guard let zoom = Self.v4l2Zoom(path), zoom.range.lowerBound < zoom.range.upperBound else { return nil }
    range = zoom.range
    devicePath = path
  }

  /// The range and value now of the zoom of the V4L2 device at `path`; nil when it has no zoom,
  /// the control is disabled, or the device cannot be opened.
  private static func v4l2Zoom(_ path: String) -> (range: ClosedRange<Int>, value: Int)? {
    withDevice(path) { fd in
      var query = v4l2_queryctrl()
      query.id = revue_v4l2_zoom_control
      var control = v4l2_control(id: revue_v4l2_zoom_control, value: 0)
      guard revue_v4l2_query_control(fd, &query) == 0, query.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) == 0,
        query.minimum <= query.maximum, revue_v4l2_get_control(fd, &control) == 0
      else { return nil }
      return (Int(query.minimum)...Int(query.maximum), Int(control.value))
    }
  }

  /// Runs `body` with the V4L2 device at `path` open, and closes it; nil when it cannot be opened.
  private static func withDevice<T>(_ path: String, _ body: (Int32) -> T?) -> T? {
    let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    return body(fd)
  }

  /// A virtual camera's zoom over `range`.
  init(virtual range: ClosedRange<Int>) {
    self.range = range
    devicePath = nil
  }

  /// The V4L2 device's zoom now; nil for a virtual camera, or when it cannot be read.
  var deviceValue: Int? {
    devicePath.flatMap { Self.v4l2Zoom($0)?.value }
  }

  /// Sets `value` (within ``range``): on the V4L2 device, or as the crop of the virtual camera's
  /// element `crop` (a `videocrop` of a picture of `width`×`height`). Returns whether it was set.
  func apply(_ value: Int, crop: Element?, width: Int, height: Int) -> Bool {
    if let devicePath {
      return Self.withDevice(devicePath) { fd in
        var control = v4l2_control(id: revue_v4l2_zoom_control, value: Int32(clamping: value))
        return revue_v4l2_set_control(fd, &control) == 0
      } ?? false
    }
    guard let crop else { return false }
    // Zoom factor: the value over the first one (100 → 1×, 200 → 2×), or a hundredth a step from 0.
    let factor =
      range.lowerBound > 0 ? Double(value) / Double(range.lowerBound) : 1 + Double(value - range.lowerBound) / 100
    let sides = [
      ("left", width), ("right", width), ("top", height), ("bottom", height),
    ]
    for (side, size) in sides {
      // Each side loses half of what the zoom leaves out, in whole pairs of pixels (4:2:0).
      let cut = Int((Double(size) * (1 - 1 / factor) / 2) / 2) * 2
      guard (try? crop.set(side, cut)) != nil else { return false }
    }
    return true
  }
}

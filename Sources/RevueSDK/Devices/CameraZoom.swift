import CV4L2
import GStreamer
import Glibc
import Synchronization

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
  /// element `crop` (a `videocrop` of a picture of `width`×`height`), from its next frame on
  /// (``PendingCrop``). Returns whether it was set.
  func apply(_ value: Int, crop: Element?, pending: PendingCrop, width: Int, height: Int) -> Bool {
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
    // Each side loses half of what the zoom leaves out, in whole pairs of pixels (4:2:0).
    let cut = { (size: Int) in Int((Double(size) * (1 - 1 / factor) / 2) / 2) * 2 }
    return pending.set(
      [("left", cut(width)), ("right", cut(width)), ("top", cut(height)), ("bottom", cut(height))], on: crop)
  }
}

/// The crop a virtual camera's zoom asks of its `videocrop`, set on the streaming thread just
/// before the next frame enters the element, never from the caller's thread: `videocrop`
/// renegotiates its output size when a frame arrives after a change, but a change that lands
/// between that check and the copy has it copy the new crop's rows out of a frame negotiated at
/// the old size, past the end of the buffer (AddressSanitizer caught it under a pinch).
final class PendingCrop: Sendable {
  private let sides = Mutex<[(String, Int)]?>(nil)

  /// Sets `sides` (property name, pixels) on `crop` before its next frame; of several changes
  /// between two frames the last wins. Returns false when `crop` has no sink pad.
  func set(_ new: [(String, Int)], on crop: Element) -> Bool {
    guard let input = crop.staticPad("sink") else { return false }
    let waiting = sides.withLock { sides in
      defer { sides = new }
      return sides != nil
    }
    guard !waiting else { return true }
    // The element is reached through the pad: a probe left on a stopped pipeline does not hold it.
    input.addProbe(.buffer) { pad, _ in
      let sides = self.sides.withLock { sides in
        defer { sides = nil }
        return sides ?? []
      }
      for (side, pixels) in sides { try? pad.element?.set(side, pixels) }
      return .remove
    }
    return true
  }
}

internal import CGStreamer
internal import CGStreamerVideo

/// A raw video format with its size, and the layout GStreamer gives its frames by default.
///
/// The corresponding C type is `GstVideoInfo`.
public struct VideoInfo: Sendable, Hashable {
  /// The pixel format, by GStreamer's name (`NV12`, `I420`, `BGRA`…).
  public var format: String
  /// The width in pixels.
  public var width: Int
  /// The height in pixels.
  public var height: Int
  /// The bytes of one frame in the default layout.
  public var size: Int
  /// The byte offset of each plane in the default layout.
  public var offsets: [Int]
  /// The bytes per row of each plane in the default layout.
  public var strides: [Int]

  /// The default layout of `format` at `width`×`height`.
  ///
  /// The corresponding C function is `gst_video_info_set_format`.
  /// - Throws: ``GStreamerError/bufferAccess(_:)`` for an unknown format or an impossible size.
  public init(format: String, width: Int, height: Int) throws(GStreamerError) {
    Gst.ensureInitialized()
    let videoFormat = gst_video_format_from_string(format)
    guard videoFormat != GST_VIDEO_FORMAT_UNKNOWN else { throw .bufferAccess("unknown video format '\(format)'") }
    guard width > 0, height > 0, width <= 32768, height <= 32768 else {
      throw .bufferAccess("impossible frame size \(width)x\(height)")
    }
    var info = GstVideoInfo()
    guard gst_video_info_set_format(&info, videoFormat, guint(width), guint(height)) != 0 else {
      throw .bufferAccess("GStreamer cannot lay out \(format) at \(width)x\(height)")
    }
    let planes = Int(info.finfo.pointee.n_planes)
    self.format = format
    self.width = width
    self.height = height
    size = Int(info.size)
    offsets = Swift.withUnsafeBytes(of: info.offset) { Array($0.bindMemory(to: gsize.self).prefix(planes)) }.map {
      Int($0)
    }
    strides = Swift.withUnsafeBytes(of: info.stride) { Array($0.bindMemory(to: gint.self).prefix(planes)) }.map {
      Int($0)
    }
  }

  /// The number of planes.
  public var planeCount: Int { offsets.count }

  /// The height in rows of plane `plane` (chroma planes of 4:2:0 formats have half the rows).
  public func planeHeight(_ plane: Int) throws(GStreamerError) -> Int {
    let videoFormat = gst_video_format_from_string(format)
    guard let info = gst_video_format_get_info(videoFormat), plane >= 0, plane < planeCount else {
      throw .bufferAccess("no plane \(plane) in \(format)")
    }
    // Each component of the plane has the same vertical subsampling in the formats used here.
    let component =
      Swift.withUnsafeBytes(of: info.pointee.plane) { Array($0.bindMemory(to: guint.self)) }
      .firstIndex { $0 == guint(plane) } ?? 0
    let shift = Swift.withUnsafeBytes(of: info.pointee.h_sub) { Array($0.bindMemory(to: guint.self)) }[component]
    return (height + (1 << Int(shift)) - 1) >> Int(shift)
  }
}

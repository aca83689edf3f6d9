/// A pixel format of ``PixelBuffer``: the seeds' `kCVPixelFormatType_…` on Linux.
public enum PixelFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// 4:2:0, a Y plane and an interleaved UV plane: what cameras and encoders prefer.
  case nv12
  /// 4:2:0, Y, U and V planes.
  case i420
  /// 8-bit BGRA, one plane.
  case bgra
  /// 8-bit RGBA, one plane.
  case rgba
  /// 4:2:2 packed YUYV, one plane (USB webcams).
  case yuy2
  /// 8-bit grey, one plane (infrared cameras).
  case gray8

  /// GStreamer's name of the format, as in caps.
  public var gstreamerName: String {
    switch self {
    case .nv12: "NV12"
    case .i420: "I420"
    case .bgra: "BGRA"
    case .rgba: "RGBA"
    case .yuy2: "YUY2"
    case .gray8: "GRAY8"
    }
  }

  /// The format of a GStreamer name, nil for formats Revue does not handle.
  public init?(gstreamerName: String) {
    guard let format = PixelFormat.allCases.first(where: { $0.gstreamerName == gstreamerName }) else { return nil }
    self = format
  }

  /// The number of planes.
  public var planeCount: Int {
    switch self {
    case .nv12: 2
    case .i420: 3
    case .bgra, .rgba, .yuy2, .gray8: 1
    }
  }

  /// The fewest bytes a row of plane `plane` takes at `width` pixels.
  func minimumStride(plane: Int, width: Int) -> Int {
    switch (self, plane) {
    case (.nv12, _): width + (plane == 1 ? width % 2 : 0)
    case (.i420, 0): width
    case (.i420, _): (width + 1) / 2
    case (.bgra, _), (.rgba, _): width * 4
    case (.yuy2, _): ((width + 1) / 2) * 4
    case (.gray8, _): width
    }
  }

  /// The rows of plane `plane` at `height` pixels.
  func planeHeight(plane: Int, height: Int) -> Int {
    switch (self, plane) {
    case (.nv12, 1), (.i420, 1), (.i420, 2): (height + 1) / 2
    default: height
    }
  }

  /// Whether the format needs an even width and height (its chroma is subsampled).
  var needsEvenDimensions: Bool {
    switch self {
    case .nv12, .i420: true
    case .yuy2, .bgra, .rgba, .gray8: false
    }
  }

  /// Whether the format is luma and chroma (and so has a colour range of its own).
  var isYUV: Bool { self == .nv12 || self == .i420 || self == .yuy2 }

  /// Whether the format needs an even width.
  var needsEvenWidth: Bool { needsEvenDimensions || self == .yuy2 }

  /// `NV12`, `BGRA`…
  public var description: String { gstreamerName }
}

/// Whether luma spans the whole 0–255 range or the video range 16–235.
public enum ColorRange: Sendable, Hashable {
  /// 16–235 (the seeds' `…VideoRange`): what cameras and codecs use.
  case video
  /// 0–255 (the seeds' `…FullRange`).
  case full

  /// The colorimetry GStreamer's caps carry for this range.
  var colorimetry: String { self == .video ? "bt601" : "jpeg" }
}

import GStreamer

/// Which way a camera faces. V4L2 rarely knows: USB cameras are `.external`.
public enum CameraPosition: String, Sendable, Hashable, CaseIterable {
  /// Facing the user (a laptop's built-in camera).
  case front
  /// Facing away from the user (a board's camera module).
  case back
  /// Plugged in (a USB webcam).
  case external
  /// Not known, or, in options, "let the SDK pick".
  case unspecified
}

/// The frame rates a format offers: one value (`minimum == maximum`) or a continuous range.
public struct FrameRateRange: Sendable, Hashable, CustomStringConvertible {
  /// The lowest rate, in frames per second.
  public var minimum: Double
  /// The highest rate, in frames per second.
  public var maximum: Double

  /// A range from `minimum` to `maximum`.
  public init(minimum: Double, maximum: Double) {
    self.minimum = minimum
    self.maximum = maximum
  }

  /// One discrete rate.
  public init(_ rate: Double) { self.init(minimum: rate, maximum: rate) }

  /// Whether `rate` is offered.
  public func contains(_ rate: Double) -> Bool { rate >= minimum - 0.001 && rate <= maximum + 0.001 }

  /// `30` or `1-60`.
  public var description: String {
    minimum == maximum ? Self.format(minimum) : "\(Self.format(minimum))-\(Self.format(maximum))"
  }

  static func format(_ rate: Double) -> String {
    rate == rate.rounded() ? String(Int(rate)) : String(format: "%g", rate)
  }
}

/// One way a camera can capture: an encoding, a size, and the frame rates it offers at that size.
public struct CaptureFormat: Sendable, Hashable, CustomStringConvertible {
  /// How the camera sends its frames.
  public enum Encoding: Sendable, Hashable, CustomStringConvertible {
    /// Raw pixels of a format.
    case raw(PixelFormat)
    /// Motion JPEG (`image/jpeg`), decoded by the SDK.
    case jpeg
    /// H.264 (`video/x-h264`), decoded by the SDK.
    case h264

    /// Whether the camera compresses the frames (USB 2.0 cameras need it for large sizes).
    public var isCompressed: Bool {
      if case .raw = self { return false }
      return true
    }

    /// `NV12`, `MJPEG` or `H264`.
    public var description: String {
      switch self {
      case .raw(let format): format.gstreamerName
      case .jpeg: "MJPEG"
      case .h264: "H264"
      }
    }
  }

  /// How the frames are encoded.
  public var encoding: Encoding
  /// The size of the frames.
  public var dimensions: Dimensions
  /// The frame rates offered, highest first.
  public var frameRates: [FrameRateRange]

  /// A format of `encoding` at `dimensions`.
  public init(encoding: Encoding, dimensions: Dimensions, frameRates: [FrameRateRange]) {
    self.encoding = encoding
    self.dimensions = dimensions
    self.frameRates = frameRates.sorted { $0.maximum > $1.maximum }
  }

  /// The highest frame rate offered.
  public var maxFrameRate: Double { frameRates.first?.maximum ?? 0 }

  /// Whether the format offers `rate` frames per second.
  public func supports(frameRate rate: Double) -> Bool { frameRates.contains { $0.contains(rate) } }

  /// The rate the camera gives when asked for `rate`: `rate` when offered, else the nearest
  /// offered rate below it, else the lowest one.
  public func clampedFrameRate(_ rate: Double) -> Double {
    if supports(frameRate: rate) { return rate }
    let below = frameRates.map { min($0.maximum, rate) }.filter { $0 <= rate }.max()
    return below ?? frameRates.map(\.minimum).min() ?? rate
  }

  /// The caps to ask the device for, at `frameRate`.
  func caps(frameRate: Double) -> Caps {
    var structure: Structure
    switch encoding {
    case .raw(let format):
      structure = Structure(name: "video/x-raw")
      try? structure.set("format", format.gstreamerName)
    case .jpeg: structure = Structure(name: "image/jpeg")
    case .h264:
      structure = Structure(name: "video/x-h264")
      try? structure.set("stream-format", "byte-stream")
      try? structure.set("alignment", "au")
    }
    try? structure.set("width", Int(dimensions.width))
    try? structure.set("height", Int(dimensions.height))
    try? structure.set("framerate", Self.fraction(frameRate))
    return Caps([structure])
  }

  /// `rate` as a fraction (`15/2` for 7.5, `30000/1001` for 29.97).
  static func fraction(_ rate: Double) -> Fraction {
    if rate == rate.rounded() { return Fraction(Int32(rate), 1) }
    if rate * 2 == (rate * 2).rounded() { return Fraction(Int32(rate * 2), 2) }
    return Fraction(Int32((rate * 1001).rounded()), 1001)
  }

  /// `MJPEG 1280x720 @ 30,24,15`.
  public var description: String {
    "\(encoding) \(dimensions) @ \(frameRates.map(\.description).joined(separator: ","))"
  }

  /// The formats of a device's caps: one per encoding, size and (for lists of raw formats) pixel
  /// format. Structures of sizes given as ranges, or of encodings Revue cannot decode, are skipped.
  static func formats(of caps: Caps) -> [CaptureFormat] {
    var formats: [CaptureFormat] = []
    for structure in caps.structures {
      guard case .int(let width)? = structure["width"], case .int(let height)? = structure["height"] else { continue }
      let dimensions = Dimensions(width: Int32(width), height: Int32(height))
      let rates = frameRates(structure["framerate"])
      var encodings: [Encoding] = []
      switch structure.name {
      case "video/x-raw":
        for name in strings(structure["format"]) {
          if let format = PixelFormat(gstreamerName: name) { encodings.append(.raw(format)) }
        }
      case "image/jpeg": encodings = [.jpeg]
      case "video/x-h264": encodings = [.h264]
      default: continue
      }
      for encoding in encodings {
        formats.append(CaptureFormat(encoding: encoding, dimensions: dimensions, frameRates: rates))
      }
    }
    return formats
  }

  private static func strings(_ value: Value?) -> [String] {
    switch value {
    case .string(let name)?: [name]
    case .list(let values)?: values.flatMap { strings($0) }
    default: []
    }
  }

  private static func frameRates(_ value: Value?) -> [FrameRateRange] {
    switch value {
    case .fraction(let rate)?: [FrameRateRange(rate.doubleValue)]
    case .fractionRange(let low, let high)?: [FrameRateRange(minimum: low.doubleValue, maximum: high.doubleValue)]
    case .list(let values)?: values.flatMap { frameRates($0) }
    default: []
    }
  }
}

/// A camera or a microphone, as the device monitor lists it.
public struct CaptureDevice: Sendable, Hashable, Identifiable, CustomStringConvertible {
  /// Whether the device captures video or audio.
  public enum Kind: String, Sendable, Hashable {
    /// A camera (`Video/Source`).
    case camera
    /// A microphone (`Audio/Source`).
    case microphone
  }

  /// Identifies the device, stable across unplug and replug where the system allows (the
  /// device path, or `virtual:PROFILE` for a virtual camera).
  public let id: String
  /// The name to show.
  public let name: String
  /// The name to show, by AVFoundation's name (``name``).
  public var localizedName: String { name }
  /// A camera or a microphone.
  public let kind: Kind
  /// Which way a camera faces.
  public let position: CameraPosition
  /// The formats a camera offers (empty for microphones).
  public let formats: [CaptureFormat]
  /// GStreamer's device, which makes the element that reads it.
  let device: Device?
  /// The camera's own zoom, when it has one.
  let zoom: CameraZoom?

  init(
    id: String, name: String, kind: Kind, position: CameraPosition, formats: [CaptureFormat], device: Device?,
    zoom: CameraZoom? = nil
  ) {
    self.id = id
    self.name = name
    self.kind = kind
    self.position = position
    self.formats = formats
    self.device = device
    self.zoom = zoom
  }

  /// The values of the camera's own zoom, the first one no zoom: V4L2's `zoom_absolute`, in the
  /// camera's units (many UVC webcams: 100 to 500, five times); nil when the camera has none
  /// (most laptop cameras) or for a microphone. ``CameraCapturer/set(zoom:)`` sets it.
  public var zoomRange: ClosedRange<Int>? { zoom?.range }

  /// The device as GStreamer's monitor reports it.
  init(_ device: Device) {
    let properties = device.properties
    let kind: Kind = device.hasClasses("Video") ? .camera : .microphone
    let id =
      properties?.get("revue.id", as: String.self) ?? properties?.get("api.v4l2.path", as: String.self)
      ?? properties?.get("device.path", as: String.self) ?? properties?.get("node.name", as: String.self)
      ?? device.displayName
    var position = CameraPosition.unspecified
    if let named = properties?.get("revue.position", as: String.self).flatMap(CameraPosition.init(rawValue:)) {
      position = named
    } else if kind == .camera,
      properties?.get("device.bus", as: String.self) == "usb"
        || (properties?.get("api.v4l2.cap.bus_info", as: String.self)?.hasPrefix("usb-") ?? false)
    {
      position = .external
    }
    var zoom: CameraZoom?
    if kind == .camera {
      if let minimum = properties?.get("revue.zoom-min", as: Int.self),
        let maximum = properties?.get("revue.zoom-max", as: Int.self), minimum < maximum
      {
        zoom = CameraZoom(virtual: minimum...maximum)
      } else if let path = properties?.get("api.v4l2.path", as: String.self)
        ?? properties?.get("device.path", as: String.self), path.hasPrefix("/dev/video")
      {
        zoom = CameraZoom(v4l2DeviceAt: path)
      }
    }
    self.init(
      id: id, name: device.displayName, kind: kind, position: position,
      formats: kind == .camera ? device.caps.map(CaptureFormat.formats(of:)) ?? [] : [], device: device, zoom: zoom)
  }

  /// Whether the camera only gives grey pictures (an infrared face-login camera): never picked
  /// unless named.
  public var isInfrared: Bool {
    kind == .camera && !formats.isEmpty && formats.allSatisfy { $0.encoding == .raw(.gray8) }
  }

  /// `name (id)`.
  public var description: String { "\(name) (\(id))" }

  /// Devices are the same when their ids are.
  public static func == (lhs: CaptureDevice, rhs: CaptureDevice) -> Bool { lhs.id == rhs.id && lhs.kind == rhs.kind }

  /// Hashes the id.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(id)
    hasher.combine(kind)
  }
}

extension CaptureDevice {
  /// What kind of camera a device is: AVFoundation's `AVCaptureDevice.DeviceType` (LiveKit's
  /// ``CameraCaptureOptions/deviceType``), as far as Linux can tell.
  ///
  /// V4L2 does not say which lens a camera has, so AVFoundation's ultra-wide, telephoto, dual,
  /// TrueDepth and LiDAR types have no counterpart. What Linux knows is the bus and the formats:
  /// a camera on USB is ``external`` (a laptop's own camera often sits on USB too, and then is
  /// external, unless the system names its position), one that gives only grey pictures is
  /// ``infrared``, and the others are ``builtInWideAngleCamera``.
  public enum DeviceType: String, Sendable, Hashable, CaseIterable {
    /// A built-in colour camera: facing front or back, or on a bus other than USB (a board's
    /// camera module).
    case builtInWideAngleCamera
    /// A plugged-in camera (a USB webcam): ``CameraPosition/external``.
    case external
    /// An infrared face-login camera (grey pictures only), which Linux lists beside the colour
    /// one; not in AVFoundation, which hides it.
    case infrared
  }

  /// What kind of camera this is (for a microphone, meaningless: ``DeviceType/builtInWideAngleCamera``).
  public var deviceType: DeviceType {
    if isInfrared { return .infrared }
    return position == .external ? .external : .builtInWideAngleCamera
  }
}

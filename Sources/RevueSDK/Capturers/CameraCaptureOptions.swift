/// What the camera produces. Immutable: change it with ``copyWith(device:position:preferredFormat:dimensions:fps:isMirrored:autoCorrectOrientation:)``
/// and ``CameraCapturer/set(options:)``.
public struct CameraCaptureOptions: Sendable, Hashable {
  /// The size type of the options (the same as ``Dimensions``).
  public typealias Dimensions = RevueSDK.Dimensions

  /// A specific camera; when set, it wins over ``deviceType`` and ``position``.
  public let device: CaptureDevice?
  /// The kind of camera preferred when no ``device`` is named (LiveKit's option, set with
  /// RevueLiveKit's initializer): the camera of that kind facing ``position`` (else the first of
  /// that kind) present when the camera starts or switches; with none of that kind, the camera
  /// for ``position``. Nil (the default): any kind.
  public private(set) var deviceType: CaptureDevice.DeviceType?
  /// Which way the camera should face (`.front` by default); `.unspecified` lets the SDK pick.
  /// With no camera facing that way (a computer with only a USB camera), the SDK uses another one.
  public let position: CameraPosition
  /// An exact format of ``device`` to capture in, instead of the SDK's choice.
  public let preferredFormat: CaptureFormat?
  /// The resolution asked for (see ``CameraCapturer``, "requested and actual size").
  public let dimensions: Dimensions
  /// The frames per second sent; when the camera gives fewer, frames are repeated.
  public let fps: Int
  /// Mirrors the picture itself: every receiver sees it mirrored.
  public let isMirrored: Bool
  /// Seed 000's "turn the pixels upright as the device rotates", true by default. Accepted and
  /// kept, with no effect: a Linux camera has no orientation sensor to follow, and its frames
  /// leave as the camera gives them (turn them with ``BufferCapturer/capture(_:timeStampNs:rotation:)``
  /// or a ``VideoProcessor`` when a camera is mounted sideways).
  public let autoCorrectOrientation: Bool

  /// Options with the defaults: the front camera (or, without one, another), 1280×720, 30 fps,
  /// not mirrored.
  public init(
    device: CaptureDevice? = nil, position: CameraPosition = .front, preferredFormat: CaptureFormat? = nil,
    dimensions: Dimensions = .h720_169, fps: Int = 30, isMirrored: Bool = false, autoCorrectOrientation: Bool = true
  ) {
    self.device = device
    self.position = position
    self.preferredFormat = preferredFormat
    self.dimensions = dimensions
    self.fps = fps
    self.isMirrored = isMirrored
    self.autoCorrectOrientation = autoCorrectOrientation
  }

  /// A copy with the values given; a value left out keeps its current value. Pass
  /// `device: .some(nil)` to clear the device (and go back to ``position``).
  public func copyWith(
    device: CaptureDevice?? = nil, position: CameraPosition? = nil, preferredFormat: CaptureFormat?? = nil,
    dimensions: Dimensions? = nil, fps: Int? = nil, isMirrored: Bool? = nil, autoCorrectOrientation: Bool? = nil
  ) -> CameraCaptureOptions {
    CameraCaptureOptions(
      device: device ?? self.device, position: position ?? self.position,
      preferredFormat: preferredFormat ?? self.preferredFormat, dimensions: dimensions ?? self.dimensions,
      fps: fps ?? self.fps, isMirrored: isMirrored ?? self.isMirrored,
      autoCorrectOrientation: autoCorrectOrientation ?? self.autoCorrectOrientation
    ).preferring(deviceType)
  }

  /// A copy whose ``deviceType`` is `deviceType`.
  @_spi(Faces) public func preferring(_ deviceType: CaptureDevice.DeviceType?) -> CameraCaptureOptions {
    var copy = self
    copy.deviceType = deviceType
    return copy
  }
}

/// The error of a camera switch that cannot happen.
public enum CameraCapturerError: Error, Sendable, Hashable {
  /// There is no camera facing the way asked, or the device asked for cannot be used.
  case deviceNotAvailable
}

/// A camera or microphone that is missing, busy or fails to open, with VideoSDK's numeric codes.
public struct DeviceError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What went wrong, with VideoSDK's code as the raw value.
  public enum Code: Int, Sendable, Hashable {
    /// The camera's device refused access (`EACCES`, `ERROR_CAMERA_ACCESS_DENIED_OR_DISMISSED`):
    /// on Linux, the user is not in the `video` group, or a sandbox denies the device.
    case cameraAccessDenied = 3017
    /// The audio source refused access (`ERROR_MICROPHONE_ACCESS_DENIED_OR_DISMISSED`): PulseAudio,
    /// PipeWire or ALSA denied it.
    case microphoneAccessDenied = 3018
    /// There is no camera (`ERROR_CAMERA_NOT_FOUND`).
    case cameraNotFound = 3021
    /// There is no microphone (`ERROR_MICROPHONE_NOT_FOUND`).
    case microphoneNotFound = 3022
    /// Another application uses the camera (`ERROR_CAMERA_IN_USE`).
    case cameraInUse = 3023
    /// Another application uses the microphone (`ERROR_MICROPHONE_IN_USE`).
    case microphoneInUse = 3024
    /// The camera could not be opened (`ERROR_VIDEO_SOURCE_INITIATION_FAILED`).
    case videoSourceInitiationFailed = 3026
    /// No device matches the id given (`ERROR_INVALID_CUSTOM_TRACK_CONFIG`).
    case invalidCustomTrackConfig = 3071
  }

  /// What went wrong.
  public var code: Code
  /// What happened and what to do, in one line.
  public var message: String

  /// An error of `code`.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  /// `message (code N)`.
  public var description: String { "\(message) (code \(code.rawValue))" }

  /// Whether `fault` says that the device refused access: `EACCES` as v4l2src and ALSA report
  /// it ("Permission denied"), or PulseAudio's and PipeWire's "Access denied".
  static func isAccessDenial(_ fault: MediaFault) -> Bool {
    let text = "\(fault.message) \(fault.debug ?? "")".lowercased()
    return text.contains("permission denied") || text.contains("access denied")
  }
}

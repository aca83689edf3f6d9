extension CaptureDevice {
  /// What kind of camera a device is: AVFoundation's `AVCaptureDevice.DeviceType`, as far as
  /// Linux can tell.
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

extension CameraCaptureOptions {
  /// LiveKit's options with a device type: seed 004's
  /// `CameraCaptureOptions(deviceType:device:position:preferredFormat:dimensions:fps:)`.
  ///
  /// On Linux the type chooses the device, once, here: with `device` nil, the options name the
  /// first camera present now of `deviceType` that faces `position` (else the first of that type).
  /// When no camera of that type is present, they name none, and the camera for `position` is
  /// used. A camera plugged in later is not considered: make the options again.
  /// ``deviceType`` then reads the type of the device chosen.
  ///
  /// Without `deviceType`, RevueSDK's ``init(device:position:preferredFormat:dimensions:fps:isMirrored:autoCorrectOrientation:)``
  /// is the one called, whose `position` is `.front` by default (seed 000's).
  /// - Parameters:
  ///   - deviceType: the kind of camera; nil for any.
  ///   - device: a specific camera; it wins over `deviceType` and `position`.
  ///   - position: which way the camera should face; `.unspecified` (seed 004's default) for any.
  ///   - preferredFormat: an exact format of the device to capture in.
  ///   - dimensions: the resolution asked for.
  ///   - fps: the frames per second asked for.
  public init(
    deviceType: CaptureDevice.DeviceType?, device: CaptureDevice? = nil, position: CameraPosition = .unspecified,
    preferredFormat: CaptureFormat? = nil, dimensions: Dimensions = .h720_169, fps: Int = 30
  ) {
    self.init(
      device: device ?? deviceType.flatMap { Self.camera(of: $0, facing: position) }, position: position,
      preferredFormat: preferredFormat, dimensions: dimensions, fps: fps)
  }

  /// The type of the camera the options name (``CaptureDevice/deviceType``); nil when they name
  /// none. Linux keeps no type apart from the device: options made with a type of which no camera
  /// was present read nil.
  public var deviceType: CaptureDevice.DeviceType? { device?.deviceType }

  /// A copy with the values given; `.absent` keeps a value (seed 004's `copyWith`). RevueSDK's
  /// `copyWith(dimensions: .h1080_169, fps: 15)` (seed 000's, plain values) stays available beside it.
  ///
  /// A `deviceType` of `.value(type)` names the first camera present now of that type (facing the
  /// copy's position, else any), unless `device` is given too; none of that type present clears
  /// the device, so the camera for the position is used. `.value(nil)` keeps the device.
  /// - Parameters:
  ///   - deviceType: the kind of camera to choose.
  ///   - device: a specific camera, or `.value(nil)` to clear it.
  ///   - position: which way the camera should face.
  ///   - preferredFormat: an exact format, or `.value(nil)` to let the SDK choose.
  ///   - dimensions: the resolution asked for.
  ///   - fps: the frames per second asked for.
  /// - Returns: the new options; apply them with ``CameraCapturer/set(options:)``.
  public func copyWith(
    deviceType: ValueOrAbsent<CaptureDevice.DeviceType?> = .absent, device: ValueOrAbsent<CaptureDevice?> = .absent,
    position: ValueOrAbsent<CameraPosition> = .absent, preferredFormat: ValueOrAbsent<CaptureFormat?> = .absent,
    dimensions: ValueOrAbsent<Dimensions> = .absent, fps: ValueOrAbsent<Int> = .absent
  ) -> CameraCaptureOptions {
    let newPosition = position.value(ifAbsent: self.position)
    var newDevice: CaptureDevice?? = nil
    if case .value(let given) = device {
      newDevice = .some(given)
    } else if case .value(let type?) = deviceType {
      newDevice = .some(Self.camera(of: type, facing: newPosition))
    }
    let newFormat: CaptureFormat?? =
      if case .value(let given) = preferredFormat { .some(given) } else { nil }
    return copyWith(
      device: newDevice, position: newPosition, preferredFormat: newFormat,
      dimensions: dimensions.value(ifAbsent: self.dimensions), fps: fps.value(ifAbsent: self.fps))
  }

  /// The first camera present of `type` facing `position`, else the first of `type`.
  static func camera(of type: CaptureDevice.DeviceType, facing position: CameraPosition) -> CaptureDevice? {
    let cameras = CameraCapturer.devices.filter { $0.deviceType == type }
    return cameras.first { $0.position == position } ?? cameras.first
  }
}

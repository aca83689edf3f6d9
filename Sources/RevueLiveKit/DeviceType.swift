@_spi(Faces) import RevueSDK

extension CameraCaptureOptions {
  /// LiveKit's options with a device type: seed 004's
  /// `CameraCaptureOptions(deviceType:device:position:preferredFormat:dimensions:fps:)`.
  ///
  /// The type is kept (``deviceType``) and chooses the camera each time it starts or switches:
  /// with `device` nil, the first camera present of that type facing `position` (else the first
  /// of that type), so a camera plugged in after the options were made counts; with none of that
  /// type present, the camera for `position`.
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
    self = CameraCaptureOptions(
      device: device, position: position, preferredFormat: preferredFormat, dimensions: dimensions, fps: fps
    ).preferring(deviceType)
  }

  /// A copy with the values given; `.absent` keeps a value (seed 004's `copyWith`). RevueSDK's
  /// `copyWith(dimensions: .h1080_169, fps: 15)` (seed 000's, plain values) stays available beside it.
  /// - Parameters:
  ///   - deviceType: the kind of camera, or `.value(nil)` for any.
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
    let newDevice: CaptureDevice?? =
      if case .value(let given) = device { .some(given) } else { nil }
    let newFormat: CaptureFormat?? =
      if case .value(let given) = preferredFormat { .some(given) } else { nil }
    return copyWith(
      device: newDevice, position: position.value(ifAbsent: self.position), preferredFormat: newFormat,
      dimensions: dimensions.value(ifAbsent: self.dimensions), fps: fps.value(ifAbsent: self.fps)
    ).preferring(deviceType.value(ifAbsent: self.deviceType))
  }
}

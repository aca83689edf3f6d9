import RevueLiveKit
import RevueSDKTestSupport
import RevueTestSupport
import Testing

/// Seed 000's processor (RevueSDK's), which a file importing RevueLiveKit names by its module.
final class PassThrough: RevueSDK.VideoProcessor {
  func process(pixelBuffer: PixelBuffer) -> PixelBuffer? { pixelBuffer }
}

/// `ValueOrAbsent`, `copyWith` of both seeds, and device types.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct OptionsTests {
  init() { TestEnvironment.prepare() }

  @Test func valueOrAbsent() {
    #expect(ValueOrAbsent<Int>.value(3).value(ifAbsent: 7) == 3)
    #expect(ValueOrAbsent<Int>.absent.value(ifAbsent: 7) == 7)
    #expect(ValueOrAbsent<Int?>.value(nil).value(ifAbsent: 7) == nil)
    #expect(ValueOrAbsent<Int>.value(3) != .absent)
  }

  @Test func copyWithKeepsWhatIsAbsentAndSetsWhatIsGiven() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let device = devices[0]
      let format = device.formats[0]
      let options = CameraCaptureOptions(
        device: device, position: .back, preferredFormat: format, dimensions: .h540_169, fps: 24, isMirrored: true)

      let copy = options.copyWith(dimensions: .value(.h1080_169), fps: .value(60))
      #expect(copy.dimensions == .h1080_169)
      #expect(copy.fps == 60)
      #expect(copy.device == device)
      #expect(copy.position == .back)
      #expect(copy.preferredFormat == format)
      #expect(copy.isMirrored)
      #expect(copy.autoCorrectOrientation == options.autoCorrectOrientation)

      let cleared = options.copyWith(device: .value(nil), position: .value(.front), preferredFormat: .value(nil))
      #expect(cleared.device == nil)
      #expect(cleared.position == .front)
      #expect(cleared.preferredFormat == nil)
      #expect(cleared.dimensions == .h540_169)
      #expect(cleared.fps == 24)

      // A type given with nil changes nothing; a device given wins over a type.
      #expect(options.copyWith(deviceType: .value(nil)) == options)
      #expect(cleared.copyWith(deviceType: .value(.infrared), device: .value(device)).device == device)
    }
  }

  @Test func copyWithAppliesToARunningCamera() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(device: devices[0]))
      let capturer = try #require(track.capturer as? CameraCapturer)
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      try await capturer.startCapture()
      _ = try await frames.next("a 720p frame") { $0.dimensions == .h720_169 }

      let newOptions = capturer.options.copyWith(dimensions: .value(.h1080_169), fps: .value(15))
      #expect(try await capturer.set(options: newOptions))
      #expect(capturer.options == newOptions)
      #expect(capturer.device == devices[0])
      _ = try await frames.next("a 1080p frame") { $0.dimensions == .h1080_169 }
      #expect(capturer.dimensions == .h1080_169)
      try await capturer.stopCapture()
    }
  }

  /// Seed 000's spellings compile and behave beside the face's overloads.
  @Test func seed000CallsStillCompileBesideTheFace() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(device: devices[0]))
      let camera = try #require(track.capturer as? CameraCapturer)
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      track.processor = PassThrough()
      try await camera.startCapture()
      let wanted = camera.options.copyWith(dimensions: .h1080_169, fps: 15)
      #expect(wanted.device == devices[0])
      #expect(try await camera.set(options: wanted))
      _ = try await frames.next("a 1080p frame") { $0.dimensions == .h1080_169 }
      try await camera.stopCapture()

      #expect(camera.options.copyWith(device: .some(nil)).device == nil)
      #expect(camera.options.copyWith(device: nil).device == devices[0])
      let plain = LocalVideoTrack.createCameraTrack()
      #expect((plain.capturer as? CameraCapturer)?.options == CameraCaptureOptions())
      #expect(plain.processor == nil)
      let named = LocalVideoTrack.createCameraTrack(name: "cam", options: CameraCaptureOptions(position: .back))
      #expect((named.capturer as? CameraCapturer)?.position == .back)
      let withSDKProcessor = LocalVideoTrack.createCameraTrack(processor: PassThrough())
      #expect(withSDKProcessor.processor is PassThrough)
      #expect(LocalVideoTrack.createCameraTrack(processor: nil).processor == nil)
    }
  }

  /// The camera a capturer of `options` opens.
  static func opened(with options: CameraCaptureOptions) async throws -> CaptureDevice? {
    let capturer = try #require(LocalVideoTrack.createCameraTrack(options: options).capturer as? CameraCapturer)
    try await capturer.startCapture()
    let device = capturer.device
    try await capturer.stopCapture()
    return device
  }

  /// `deviceType` chooses among the cameras present: this test needs every camera of the process.
  @Test(.wholeProcess) func deviceTypePicksACameraOfThatType() async throws {
    let profiles = ["usb-720p-webcam", "laptop-integrated", "laptop-ir", "csi-camera-module"]
    try await TestCameras.with(profiles) { devices in
      let (laptop, infrared, module) = (devices[1], devices[2], devices[3])
      var usb = devices[0]
      #expect(devices.map(\.deviceType) == [.external, .builtInWideAngleCamera, .infrared, .builtInWideAngleCamera])

      // Seed 004's example: the options keep the type, and the camera is chosen when it starts.
      let options = CameraCaptureOptions(
        deviceType: .builtInWideAngleCamera,
        position: .back,
        dimensions: .h1080_169,
        fps: 60
      )
      #expect(options.device == nil)
      #expect(options.deviceType == .builtInWideAngleCamera)
      #expect(options.position == .back)
      #expect(options.dimensions == .h1080_169)
      #expect(options.fps == 60)
      #expect(try await Self.opened(with: options) == module)
      #expect(
        try await Self.opened(with: CameraCaptureOptions(deviceType: .builtInWideAngleCamera, position: .front))
          == laptop)
      #expect(try await Self.opened(with: CameraCaptureOptions(deviceType: .infrared)) == infrared)
      // A device given wins over the type.
      #expect(try await Self.opened(with: CameraCaptureOptions(deviceType: .external, device: module)) == module)
      // copyWith sets the type or keeps it; seed 000's copyWith keeps it too.
      let external = options.copyWith(deviceType: .value(.external))
      #expect(external.deviceType == .external && external.position == .back)
      #expect(options.copyWith(fps: .value(15)).deviceType == .builtInWideAngleCamera)
      #expect(options.copyWith(fps: 15).deviceType == .builtInWideAngleCamera)
      #expect(options.copyWith(deviceType: .value(nil)).deviceType == nil)

      // The camera of the type captures, and frames come.
      let track = LocalVideoTrack.createCameraTrack(options: external)
      let capturer = try #require(track.capturer as? CameraCapturer)
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      try await capturer.startCapture()
      #expect(capturer.device == usb)
      _ = try await frames.next("a frame of the external camera")
      try await capturer.stopCapture()

      // No camera of the type: the camera for the position. One plugged in later counts.
      try await TestCameras.remove([usb])
      #expect(try await Self.opened(with: external) == module)
      usb = try await TestCameras.add("usb-720p-webcam")
      #expect(try await Self.opened(with: external) == usb)
      try await TestCameras.remove([usb])
    }
  }
}

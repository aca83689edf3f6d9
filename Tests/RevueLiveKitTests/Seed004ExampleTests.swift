import RevueLiveKit
import RevueSDKTestSupport
import RevueTestSupport
import Testing

// Seed 004's code examples as the seed writes them, with only the Apple types changed
// (AVCaptureDevice → CaptureDevice, CMVideoFormatDescriptionGetDimensions → the format's
// dimensions), in a file that imports RevueLiveKit alone, run against virtual cameras.

class CustomProcessor: VideoProcessor {
  func process(frame: VideoFrame) -> VideoFrame? {
    // Apply custom processing
    return frame
  }
}

@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct Seed004ExampleTests {
  init() { TestEnvironment.prepare() }

  /// "Creating a Camera Track", "Camera Properties", "Multitasking", "Video Processing": the
  /// calls that pick a camera by position, on a front and a back camera.
  @Test(.wholeProcess) func creatingCameraTracks() async throws {
    try await TestCameras.with(["laptop-integrated", "csi-camera-module"]) { devices in
      let (front, back) = (devices[0], devices[1])

      let cameraTrack = LocalVideoTrack.createCameraTrack()
      let cameraCapturer = try #require(cameraTrack.capturer as? CameraCapturer)
      try await cameraCapturer.startCapture()
      #expect(cameraCapturer.device == front)  // RevueSDK's default: the front camera

      // Camera Properties
      let device = try #require(cameraCapturer.device)
      print("Using: \(device.localizedName)")
      print("Position: \(cameraCapturer.position)")
      #expect(cameraCapturer.captureSession != nil)
      // Multitasking Camera Access: nothing to enable on Linux.
      if cameraCapturer.isMultitaskingAccessSupported {
        cameraCapturer.isMultitaskingAccessEnabled = true
      }
      #expect(cameraCapturer.isMultitaskingAccessEnabled == false)
      try await cameraCapturer.stopCapture()

      // With custom options
      let options = CameraCaptureOptions(
        position: .front,
        dimensions: .h720_169,
        fps: 30
      )
      let customTrack = LocalVideoTrack.createCameraTrack(
        name: "camera",
        options: options
      )
      #expect(customTrack.name == "camera")
      #expect((customTrack.capturer as? CameraCapturer)?.options == options)

      // Multi-Camera Support
      let frontCamera = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(position: .front)
      )
      let backCamera = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(position: .back)
      )
      let frontCapturer = try #require(frontCamera.capturer as? CameraCapturer)
      let backCapturer = try #require(backCamera.capturer as? CameraCapturer)
      let (frontFrames, backFrames) = (FrameStream(), FrameStream())
      frontCamera.add(videoRenderer: frontFrames)
      backCamera.add(videoRenderer: backFrames)
      try await frontCapturer.startCapture()
      try await backCapturer.startCapture()
      #expect(frontCapturer.device == front)
      #expect(backCapturer.device == back)
      _ = try await frontFrames.next("a frame of the front camera")
      _ = try await backFrames.next("a frame of the back camera")
      try await frontCapturer.stopCapture()
      try await backCapturer.stopCapture()

      // Video Processing
      let processor = CustomProcessor()
      let track = LocalVideoTrack.createCameraTrack(
        processor: processor
      )
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      try await track.capturer?.startCapture()
      _ = try await frames.next("a frame through the processor")
      try await track.capturer?.stopCapture()
    }
  }

  /// "Device Management" and "Switching Cameras", then "Update Options at Runtime".
  @Test(.wholeProcess) func devicesAndSwitching() async throws {
    try await TestCameras.with(["laptop-integrated", "csi-camera-module"]) { added in
      let devices = try await CameraCapturer.captureDevices()
      for device in devices {
        print("Device: \(device.localizedName), Position: \(device.position)")
      }
      #expect(Set(devices) == Set(added))

      let canSwitch = try await CameraCapturer.canSwitchPosition()
      if canSwitch {
        print("Both front and back cameras available")
      }
      #expect(canSwitch)

      let options = CameraCaptureOptions(position: .front)
      let track = LocalVideoTrack.createCameraTrack(options: options)
      let cameraCapturer = try #require(track.capturer as? CameraCapturer)
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      try await cameraCapturer.startCapture()
      #expect(cameraCapturer.device?.position == .front)

      // Toggle Between Front and Back
      #expect(try await cameraCapturer.switchCameraPosition())
      #expect(cameraCapturer.device?.position == .back)
      // Set Specific Camera Position
      #expect(try await cameraCapturer.set(cameraPosition: .front))
      #expect(cameraCapturer.device?.position == .front)

      // Update Options at Runtime, on the back camera (the front one gives 1280x720 at most), at
      // 30 fps where the seed asks 60: the back camera gives 1080p up to 50 fps, and the SDK
      // ranks the frame rate before the size (seed 004's format selection), so 60 gets 720p.
      let backOptions = options.copyWith(position: .value(.back))
      #expect(try await cameraCapturer.set(options: backOptions))
      let newOptions = backOptions.copyWith(
        dimensions: .value(.h1080_169),
        fps: .value(30)
      )
      #expect(try await cameraCapturer.set(options: newOptions))
      #expect(cameraCapturer.options == newOptions)
      _ = try await frames.next("a 1080p frame") { $0.dimensions == .h1080_169 }
      try await cameraCapturer.stopCapture()
    }
  }

  /// "Custom Format Selection": an exact format of the device.
  @Test func customFormatSelection() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { added in
      let device = try await CameraCapturer.captureDevices().first { $0 == added[0] }!
      let formats = device.formats

      // Find a specific format
      let format = formats.first { format in
        let dimensions = format.dimensions
        return dimensions.width == 1920 && dimensions.height == 1080
      }

      let options = CameraCaptureOptions(
        device: device,
        preferredFormat: format
      )
      #expect(format != nil)
      let track = LocalVideoTrack.createCameraTrack(options: options)
      let capturer = try #require(track.capturer as? CameraCapturer)
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      try await capturer.startCapture()
      #expect(capturer.format == format)
      _ = try await frames.next("a 1920x1080 frame") { $0.dimensions == .h1080_169 }
      try await capturer.stopCapture()
    }
  }
}

import Foundation
import GStreamer
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct CameraCapturerTests {
  init() { TestEnvironment.prepare() }

  /// A camera track on `device`, with a renderer.
  static func track(on device: CaptureDevice, _ options: CameraCaptureOptions = CameraCaptureOptions())
    -> (LocalVideoTrack, CameraCapturer, FrameStream)
  {
    let track = LocalVideoTrack.createCameraTrack(options: options.copyWith(device: device))
    let renderer = FrameStream()
    track.add(videoRenderer: renderer)
    return (track, track.capturer as! CameraCapturer, renderer)
  }

  @Test func mjpegCameraDeliversFramesOfTheChosenSize() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let (track, capturer, renderer) = Self.track(on: devices[0])
      try await capturer.startCapture()
      #expect(capturer.captureState == .capturing)
      #expect(capturer.device == devices[0])
      #expect(capturer.format?.encoding == .jpeg)
      let frame = try await renderer.next()
      #expect(frame.dimensions == Dimensions(width: 1280, height: 720))
      #expect(capturer.dimensions == Dimensions(width: 1280, height: 720))
      try await capturer.stopCapture()
      #expect(capturer.device == nil)
      #expect(capturer.dimensions == nil)
      _ = track
    }
  }
}

extension CameraCapturerTests {
  /// Luma of the top-left and top-right pixels.
  static func topCorners(_ frame: PixelBuffer) throws -> (left: UInt8, right: UInt8) {
    try frame.withPlane(0) { bytes, _ in (bytes[0], bytes[frame.width - 1]) }
  }

  @Test func optionsOfAStoppedCameraAreOnlyRecorded() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let (track, capturer, renderer) = Self.track(on: devices[0])
      let wanted = capturer.options.copyWith(dimensions: .h1080_169, fps: 15)
      #expect(try await capturer.set(options: wanted) == false)
      #expect(capturer.options == wanted)
      #expect(capturer.device == nil)
      try await capturer.startCapture()
      let frame = try await renderer.next()
      #expect(frame.dimensions == .h1080_169)
      try await capturer.stopCapture()
      _ = track
    }
  }

  @Test func newResolutionAppliesWithoutStoppingTheTrack() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let (track, capturer, renderer) = Self.track(on: devices[0])
      try await capturer.startCapture()
      _ = try await renderer.next { $0.dimensions == .h720_169 }
      let events = capturer.events
      #expect(try await capturer.set(options: capturer.options.copyWith(dimensions: .h1080_169)) == true)
      _ = try await renderer.next { $0.dimensions == .h1080_169 }
      #expect(capturer.dimensions == .h1080_169)
      #expect(capturer.captureState == .capturing)
      try await capturer.stopCapture()
      let seen = try await withDeadline(20, "the capturer's events up to its stop") {
        var seen: [VideoCapturer.Event] = []
        for await event in events {
          seen.append(event)
          if event == .state(.idle) { break }
        }
        return seen
      }
      // One size change, and the only state change is the final stop.
      #expect(seen == [.dimensions(.h1080_169), .state(.idle)])
      _ = track
    }
  }

  @Test func quickCallsCoalesceToTheLast() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let (track, capturer, renderer) = Self.track(on: devices[0])
      try await capturer.startCapture()
      let opensBefore = VirtualDevices.openCount(devices[0].id)
      let options = capturer.options
      // Each call changes the options before it first suspends: immediate tasks order the calls.
      let first = Task.immediate { try await capturer.set(options: options.copyWith(dimensions: .h360_169)) }
      #expect(capturer.options.dimensions == .h360_169)
      let second = Task.immediate { try await capturer.set(options: options.copyWith(dimensions: .h540_169)) }
      #expect(capturer.options.dimensions == .h540_169)
      let third = try await capturer.set(options: options.copyWith(dimensions: .h1080_169))
      let earlier = try await withDeadline(20, "the two earlier calls") {
        [try await first.value, try await second.value]
      }
      #expect(earlier + [third] == [false, false, true])
      #expect(capturer.options.dimensions == .h1080_169)
      #expect(VirtualDevices.openCount(devices[0].id) == opensBefore + 1)
      _ = try await renderer.next { $0.dimensions == .h1080_169 }
      try await capturer.stopCapture()
      _ = track
    }
  }
}

extension CameraCapturerTests {
  /// Picks cameras by position among every camera of the process: it runs alone.
  @Test(.wholeProcess) func switchingPositionFollowsTheSeed() async throws {
    try await TestCameras.with(["laptop-integrated", "csi-camera-module"]) { devices in
      let track = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(position: .front))
      let capturer = try #require(track.capturer as? CameraCapturer)
      #expect(try await CameraCapturer.canSwitchPosition())
      // Stopped: only recorded.
      #expect(try await capturer.switchCameraPosition() == false)
      #expect(capturer.position == .back)
      try await capturer.startCapture()
      #expect(capturer.device?.position == .back)
      #expect(try await capturer.set(cameraPosition: .front) == true)
      #expect(capturer.device?.position == .front)
      #expect(capturer.options.device == nil)
      #expect(try await capturer.switchCameraPosition() == true)
      #expect(capturer.device?.position == .back)
      try await capturer.stopCapture()
    }
  }

  /// Asks for a position no camera of the process has: it runs alone.
  @Test(.wholeProcess) func noCameraThatWayThrowsBeforeAnythingChanges() async throws {
    try await TestCameras.with(["laptop-integrated"]) { devices in
      let (track, capturer, _) = Self.track(on: devices[0])
      try await capturer.startCapture()
      let before = (capturer.options, capturer.position)
      await #expect(throws: CameraCapturerError.deviceNotAvailable) { try await capturer.set(cameraPosition: .back) }
      #expect(capturer.options == before.0 && capturer.position == before.1)
      #expect(try await CameraCapturer.canSwitchPosition() == false)
      // A device that is not there (unplugged) while running.
      let gone = try await TestCameras.add("usb-720p-webcam")
      try await TestCameras.remove([gone])
      await #expect(throws: CameraCapturerError.deviceNotAvailable) {
        try await capturer.set(options: capturer.options.copyWith(device: gone))
      }
      #expect(capturer.options == before.0)
      #expect(capturer.device == devices[0])
      try await capturer.stopCapture()
      _ = track
    }
  }

  /// A busy camera falls back to any other camera of the process: it runs alone.
  /// A named camera that cannot open gives way to the camera for the position, and the capturer
  /// says why. Runs alone: the stand-in is the first camera of that position in the process.
  @Test(.wholeProcess) func theCameraForThePositionStandsInAndTheCapturerSaysWhy() async throws {
    try await TestCameras.with(["usb-720p-webcam", "usb-720p-webcam"]) { devices in
      let (other, asked) = (devices[0], devices[1])
      VirtualDevices.setBusy(asked.id, true)
      defer { VirtualDevices.setBusy(asked.id, false) }
      let (_, capturer, _) = Self.track(on: asked, CameraCaptureOptions(position: asked.position))
      try await capturer.startCapture()
      #expect(capturer.device == other)
      #expect(capturer.deviceError?.code == .cameraInUse)
      try await capturer.stopCapture()
      // Opened as asked, nothing to say.
      VirtualDevices.setBusy(asked.id, false)
      try await capturer.startCapture()
      #expect(capturer.device == asked && capturer.deviceError == nil)
      try await capturer.stopCapture()
    }
  }

  @Test(.wholeProcess) func busyCameraKeepsTheOldOneAndRestoresOptions() async throws {
    try await TestCameras.with(["laptop-integrated", "usb-720p-webcam"]) { devices in
      let (track, capturer, renderer) = Self.track(on: devices[0])
      try await capturer.startCapture()
      let before = (capturer.options, capturer.position)
      VirtualDevices.setBusy(devices[1].id, true)
      defer { VirtualDevices.setBusy(devices[1].id, false) }
      let changed = Task.immediate { try await capturer.set(options: capturer.options.copyWith(device: devices[1])) }
      #expect(capturer.options.device == devices[1])  // changed at once
      #expect(try await withDeadline(20, "the call with the busy camera") { try await changed.value } == false)
      #expect(capturer.options == before.0 && capturer.position == before.1)
      #expect(capturer.device == devices[0])
      #expect(capturer.captureState == .capturing)
      _ = try await renderer.next()
      try await capturer.stopCapture()
      _ = track
    }
  }

  @Test func downgradeIsReportedEachTimeTheCameraSettles() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let (track, capturer, _) = Self.track(on: devices[0], CameraCaptureOptions(dimensions: .h1080_169))
      let events = capturer.events
      try await capturer.startCapture()
      #expect(try await capturer.set(options: capturer.options.copyWith(dimensions: .h2160_169)) == true)
      try await capturer.stopCapture()
      let (downgrades, sizes) = try await withDeadline(20, "the capturer's events up to its stop") {
        var downgrades: [VideoCapturer.Event] = []
        var sizes: [Dimensions?] = []
        for await event in events {
          switch event {
          case .downgradedResolution: downgrades.append(event)
          case .dimensions(let size): sizes.append(size)
          default: break
          }
          if event == .state(.idle) { break }
        }
        return (downgrades, sizes)
      }
      #expect(
        downgrades == [
          .downgradedResolution(requested: .h1080_169, actual: .h720_169),
          .downgradedResolution(requested: .h2160_169, actual: .h720_169),
        ])
      #expect(sizes == [.h720_169])  // the size did not change
      _ = track
    }
  }

  @Test func mirroringMirrorsWhatIsSent() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let (track, capturer, renderer) = Self.track(on: devices[0])
      try await capturer.startCapture()
      let plain = try Self.topCorners(try await renderer.next())
      #expect(try await capturer.set(options: capturer.options.copyWith(isMirrored: true)) == true)
      let flipped = try await renderer.next("a mirrored frame") {
        ((try? Self.topCorners($0)).map { $0.left < $0.right }) ?? false
      }
      let mirrored = try Self.topCorners(flipped)
      #expect(plain.left > plain.right + 50)  // SMPTE bars: grey on the left, blue on the right
      #expect(abs(Int(mirrored.left) - Int(plain.right)) < 8 && abs(Int(mirrored.right) - Int(plain.left)) < 8)
      try await capturer.stopCapture()
      _ = track
    }
  }

  @Test func frameRateAboveTheCameraRepeatsFrames() async throws {
    try await TestCameras.with(["laptop-integrated"]) { devices in
      // MJPEG 1280x720 gives at most 30 fps: 60 are sent, each picture twice.
      let (track, capturer, renderer) = Self.track(on: devices[0], CameraCaptureOptions(fps: 60))
      try await capturer.startCapture()
      #expect(capturer.format?.maxFrameRate == 30)
      let frames = renderer.frames
      let stamps = try await withDeadline(20, "7 timestamped frames") {
        var stamps: [UInt64] = []
        for await frame in frames {
          if let pts = frame.timestamp?.nanoseconds { stamps.append(pts) }
          if stamps.count == 7 { break }
        }
        return stamps
      }
      let gaps = zip(stamps.dropFirst(), stamps).map { Double($0 - $1) / 1e6 }
      #expect(gaps.allSatisfy { abs($0 - 1000.0 / 60) < 1 }, "gaps \(gaps) ms")
      try await capturer.stopCapture()
      _ = track
    }
  }
}

extension CameraCapturerTests {
  @Test func h264CameraIsDecoded() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let h264 = try #require(devices[0].formats.first { $0.encoding == .h264 && $0.dimensions == .h720_169 })
      let (track, capturer, renderer) = Self.track(on: devices[0], CameraCaptureOptions(preferredFormat: h264))
      try await capturer.startCapture()
      #expect(capturer.format == h264)
      let frame = try await renderer.next()
      #expect(frame.dimensions == .h720_169)
      try await capturer.stopCapture()
      _ = track
    }
  }
}

extension CameraCapturerTests {
  @Test func optionsAreCopiedWithChanges() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let options = CameraCaptureOptions(device: devices[0], position: .front)
      #expect(options.dimensions == .h720_169 && options.fps == 30 && !options.isMirrored)
      let copy = options.copyWith(dimensions: .h1080_169, fps: 15)
      #expect(copy.device == devices[0] && copy.position == .front)
      #expect(copy.dimensions == .h1080_169 && copy.fps == 15)
      #expect(options.copyWith(fps: 10).device == devices[0])  // left out: kept
      #expect(options.copyWith(device: .some(nil)).device == nil)  // .some(nil): cleared
      #expect(options.copyWith(isMirrored: true).isMirrored)
    }
  }
}

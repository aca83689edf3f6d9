import Foundation
import GStreamer
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct LocalParticipantTests {
  init() { TestEnvironment.prepare() }

  /// A participant whose camera is `device`, and a renderer on its camera track.
  static func participant(camera device: CaptureDevice) async throws -> (LocalParticipant, CameraCapturer, FrameStream)
  {
    let participant = Room().localParticipant!
    let capturer = participant.cameraTrack.capturer as! CameraCapturer
    #expect(try await capturer.set(options: capturer.options.copyWith(device: device)) == false)  // stopped: recorded
    let renderer = FrameStream()
    participant.cameraTrack.add(videoRenderer: renderer)
    return (participant, capturer, renderer)
  }

  /// Waits until the capturer reaches `state`.
  static func waitFor(
    _ state: CaptureState, of capturer: VideoCapturer, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    let events = capturer.events
    if capturer.captureState == state { return }
    try await withDeadline(20, "the capturer to be \(state)", sourceLocation: sourceLocation) {
      for await event in events where event == .state(state) { return }
    }
  }

  @Test func tracksExistBeforeTheyRun() {
    let participant = Room().localParticipant!
    #expect(participant.cameraTrack.name == "camera" && participant.cameraTrack.source == .camera)
    #expect(participant.cameraTrack.capturer is CameraCapturer)
    #expect(participant.microphoneTrack.name == "microphone" && participant.microphoneTrack.source == .microphone)
    #expect(participant.microphoneTrack.capturer is MicrophoneCapturer)
    #expect(!participant.isCameraActive && !participant.isMicrophoneActive)
    #expect(Room.shared.localParticipant != nil)
  }

  @Test func quickTogglesOpenTheCameraAtMostTwice() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let (participant, capturer, renderer) = try await Self.participant(camera: devices[0])
      for index in 0..<20 {
        participant.setCamera(enabled: index % 2 == 0)
        #expect(participant.isCameraActive == (index % 2 == 0))  // at once
      }
      participant.setCamera(enabled: true)
      #expect(participant.isCameraActive)
      #expect(capturer.captureState == .idle)  // the device follows later
      try await Self.waitFor(.capturing, of: capturer)
      _ = try await renderer.next()
      #expect(VirtualDevices.openCount(devices[0].id) <= 2)
      #expect(VirtualDevices.openCount(devices[0].id) >= 1)
      participant.setCamera(enabled: false)
      #expect(!participant.isCameraActive)
      try await Self.waitFor(.idle, of: capturer)
      #expect(capturer.device == nil)
    }
  }

  /// A busy camera falls back to any other camera of the process: it runs alone.
  @Test(.wholeProcess) func cameraThatCannotStartTurnsTheFlagBack() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      VirtualDevices.setBusy(devices[0].id, true)
      defer { VirtualDevices.setBusy(devices[0].id, false) }
      let (participant, capturer, _) = try await Self.participant(camera: devices[0])
      // Only a busy camera: the capturer says which error, the switch never throws.
      await #expect {
        try await capturer.startCapture()
      } throws: { error in
        (error as? DeviceError)?.code == .cameraInUse && (error as? DeviceError)?.code.rawValue == 3023
      }
      let events = participant.events
      participant.setCamera(enabled: true)
      #expect(participant.isCameraActive)
      try await withDeadline(20, "the camera flag to turn back off") {
        for await event in events where event == .cameraActive(false) { return }
      }
      #expect(capturer.captureState == .idle)
    }
  }

  @Test func optionsGivenToSetCameraApply() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let (participant, capturer, renderer) = try await Self.participant(camera: devices[0])
      participant.setCamera(enabled: true, options: capturer.options.copyWith(dimensions: .h1080_169))
      _ = try await renderer.next { $0.dimensions == .h1080_169 }
      participant.setCamera(enabled: true, options: capturer.options.copyWith(dimensions: .h360_169))
      _ = try await renderer.next { $0.dimensions == .h360_169 }
      participant.setCamera(enabled: false)
      try await Self.waitFor(.idle, of: capturer)
    }
  }

  @Test func unplugStopsCleanlyAndReplugResumes() async throws {
    try await TestCameras.with(["laptop-integrated"]) { devices in
      let (participant, capturer, renderer) = try await Self.participant(camera: devices[0])
      let events = capturer.events
      let flags = participant.events
      participant.setCamera(enabled: true)
      try await Self.waitFor(.capturing, of: capturer)
      _ = try await renderer.next()
      VirtualDevices.unplug(devices[0].id)
      let reason = try await withDeadline(20, "the capturer to stop on the unplug") {
        var reason: String?
        for await event in events {
          if case .interrupted(let why) = event { reason = why }
          if event == .state(.idle) { break }
        }
        return reason
      }
      #expect(reason?.contains("unplugged") == true, "\(reason ?? "no reason")")
      #expect(capturer.device == nil && capturer.captureState == .idle)
      try await withDeadline(20, "the camera flag to turn off on the unplug") {
        for await flag in flags where flag == .cameraActive(false) { return }
      }
      // Plugged back while still wanted: capture resumes by itself.
      let resumed = capturer.events
      VirtualDevices.replug(devices[0].id)
      try await withDeadline(20, "capture to resume on the replug") {
        for await event in resumed where event == .state(.capturing) { return }
      }
      #expect(capturer.device == devices[0])
      let framesBefore = renderer.count
      _ = try await renderer.next { _ in renderer.count > framesBefore }
      try await withDeadline(20, "the camera flag to turn back on") {
        for await flag in flags where flag == .cameraActive(true) { return }
      }
      participant.setCamera(enabled: false)
      try await Self.waitFor(.idle, of: capturer)
    }
  }

  /// Ends with no camera in the process at all: it runs alone.
  @Test(.wholeProcess) func missingCamerasGiveVideoSDKCodes() async throws {
    await #expect {
      _ = try await CameraCapturer.captureDevice(id: "no-such-camera")
    } throws: { error in (error as? DeviceError)?.code.rawValue == 3071 }
    // A camera whose only format Revue cannot use (raw Bayer): it fails to open.
    let bayer = try CameraProfile(
      parsing:
        "name: Bayer Sensor\nposition: back\nvideo/x-bayer, format=rggb, width=640, height=480, framerate=30/1\n",
      profileName: "bayer-\(UInt32.random(in: 0..<UInt32.max))", file: "bayer.caps")
    let events = CameraCapturer.deviceEvents
    let id = VirtualDevices.addCamera(bayer)
    let device: CaptureDevice? = try await withDeadline(20, "the SDK to list the Bayer camera") {
      for await event in events {
        if case .added(let added) = event, added.id == id { return added }
      }
      return nil
    }
    let named = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(device: device))
    await #expect {
      try await named.capturer?.startCapture()
    } throws: { error in (error as? DeviceError)?.code.rawValue == 3026 }
    try await TestCameras.remove([try #require(device)])
    // No camera at all (every test removes its own): 3021.
    let removals = CameraCapturer.deviceEvents
    if try await !CameraCapturer.captureDevices().isEmpty {
      try await withDeadline(20, "the last camera to go") {
        for await _ in removals where try await CameraCapturer.captureDevices().isEmpty { return }
      }
    }
    let none = LocalVideoTrack.createCameraTrack()
    await #expect {
      try await none.capturer?.startCapture()
    } throws: { error in (error as? DeviceError)?.code.rawValue == 3021 }
  }
}

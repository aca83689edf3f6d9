import Foundation
import RevueSDKTestSupport
import RevueTestSupport
import RevueVideoSDK
import Synchronization
import Testing

/// `createCameraVideoTrack` against virtual cameras. Tests that pick a camera by side or need no
/// camera at all depend on every camera of the process: they run alone (`.wholeProcess`).
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct CameraTrackTests {
  init() { TestEnvironment.prepare() }

  /// The seed's first example, as written (it picks the camera by side: it runs alone).
  @Test(.wholeProcess) func seedExampleMakesATrackWithItsSettings() async throws {
    try await TestCameras.with(["laptop-integrated"]) { devices in
      var made: CustomStreamTrack?
      do {
        let videoMediaTrack = try await VideoSDK.createCameraVideoTrack(
          encoderConfig: .h720p_w960p,
          facingMode: .front,
          multiStream: true,
          maxLayer: .MAX_LAYER_2,  // Default: .MAX_LAYER_3
          bitrateMode: .HIGH_QUALITY,  // Default: .BALANCED
          codec: .VP8  // Default: .VP8
        )
        made = videoMediaTrack
      } catch {
        print("Failed to create custom video track: \(error)")
      }
      let track = try #require(made)
      #expect(track.device == devices[0])
      #expect(track.encoderConfig == .camera(.h720p_w960p) && track.facingMode == .front && track.codec == .VP8)
      #expect(track.cameraId == nil && track.maxLayer == .MAX_LAYER_2 && track.bitrateMode == .HIGH_QUALITY)
      #expect(track.videoEncoding == VideoEncoding(maxBitrate: 1_600_000, maxFps: 30))
      #expect(track.layerCount == 2)
      let options = try #require(track.videoPublishOptions)
      #expect(options.simulcast == true && options.maxLayer == .maxLayer2 && options.preferredCodec == .vp8)
      #expect(options.bitrateMode == .highQuality && options.encoding?.maxBitrate == 1_600_000)
      #expect(options.layers(for: Dimensions(width: 960, height: 720)).count == 2)
      #expect(track.audioTrack == nil && !track.isEnded)
      track.stop()
    }
  }

  /// The seed's preview example: frames reach a renderer before any room; stop() ends the track
  /// and tells onEnded once, on the main actor, with nil.
  @MainActor @Test(.wholeProcess) func seedPreviewExampleShowsFramesAndEndsOnStop() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let previewView = FrameStream()
      var cameraTrack: CustomStreamTrack?
      let recorder = EndedRecorder()

      // show a camera preview before joining
      cameraTrack = try await VideoSDK.createCameraVideoTrack()
      cameraTrack?.videoTrack?.add(videoRenderer: previewView)
      // find out when the track ends, for example when the camera fails to open
      cameraTrack?.onEnded = recorder.handler

      let frame = try await previewView.next()
      #expect(frame.dimensions == Dimensions(width: 1280, height: 720))
      #expect(cameraTrack?.device == devices[0])
      #expect(cameraTrack?.videoEncoding == VideoEncoding(maxBitrate: 1_500_000, maxFps: 30))
      #expect(cameraTrack?.layerCount == 3)

      // the user closed the preview screen without joining
      cameraTrack?.videoTrack?.remove(videoRenderer: previewView)
      cameraTrack?.stop()

      #expect(cameraTrack?.isEnded == true)
      #expect(try await recorder.firstCall() == nil)
      let capturer = try #require(cameraTrack?.videoTrack?.capturer as? CameraCapturer)
      #expect(capturer.device == nil && capturer.captureState == .idle)  // closed before onEnded
      cameraTrack?.stop()  // again: nothing more happens
      #expect(cameraTrack?.error == nil)

      // A handler set after the end is called at once (here, before the setter returns).
      let late = EndedRecorder()
      cameraTrack?.onEnded = late.handler
      #expect(late.calls.count == 1 && late.calls[0] == nil)
      #expect(recorder.calls.count == 1)
    }
  }

  /// Seed 002: "If a room is sending from the device, the device stays open".
  @MainActor @Test func stoppingAPublishedTrackLeavesItsCameraOpen() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let track = try await VideoSDK.createCameraVideoTrack(cameraId: devices[0].id)
      let videoTrack = try #require(track.videoTrack)
      let room = Room()
      try await room.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 3))")!)
      let publication = try await room.localParticipant!.publish(videoTrack: videoTrack)
      #expect(videoTrack.isPublished)
      let recorder = EndedRecorder()
      track.onEnded = recorder.handler
      track.stop()
      #expect(track.isEnded)
      #expect(try await recorder.firstCall() == nil)
      #expect(videoTrack.capturer?.captureState == .capturing, "the room still sends from the camera")
      let preview = FrameStream()
      videoTrack.add(videoRenderer: preview)
      _ = try await preview.next()
      // Released as seed 002 says: the room stops sending, then the camera is switched off.
      await room.localParticipant!.unpublish(publication: publication)
      #expect(!videoTrack.isPublished)
      try await videoTrack.capturer?.stopCapture()
      await room.disconnect()
    }
  }

  @Test func cameraIdWinsOverFacingMode() async throws {
    try await TestCameras.with(["laptop-integrated", "csi-camera-module"]) { devices in
      let back = devices[1]
      let track = try await VideoSDK.createCameraVideoTrack(
        encoderConfig: .h480p_w640p, facingMode: .front, cameraId: back.id)
      #expect(track.device == back && track.cameraId == back.id)
      let capturer = try #require(track.videoTrack?.capturer as? CameraCapturer)
      #expect(capturer.device == back)
      let renderer = FrameStream()
      track.videoTrack?.add(videoRenderer: renderer)
      #expect(try await renderer.next().dimensions == Dimensions(width: 640, height: 480))
      track.stop()
    }
  }

  /// Picks by side among every camera of the process: it runs alone.
  @Test(.wholeProcess) func facingModeFallsBackToTheOtherSide() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let track = try await VideoSDK.createCameraVideoTrack(facingMode: .front)
      #expect(track.device == devices[0] && track.device?.position == .back)
      #expect(track.facingMode == .front)  // as asked
      track.stop()
    }
    try await TestCameras.with(["laptop-integrated", "csi-camera-module"]) { devices in
      let front = try await VideoSDK.createCameraVideoTrack(facingMode: .front)
      #expect(front.device == devices[0])
      front.stop()
      let back = try await VideoSDK.createCameraVideoTrack(facingMode: .back)
      #expect(back.device == devices[1])
      back.stop()
    }
  }

  @Test func unknownCameraIdThrows3071() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { _ in
      await expectVideoSDKError(3071, "ERROR_INVALID_CUSTOM_TRACK_CONFIG") {
        try await VideoSDK.createCameraVideoTrack(cameraId: "no-such-camera")
      }
    }
  }

  @Test func busyCameraThrows3023() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      VirtualDevices.setBusy(devices[0].id, true)
      defer { VirtualDevices.setBusy(devices[0].id, false) }
      await expectVideoSDKError(3023, "ERROR_CAMERA_IN_USE") {
        try await VideoSDK.createCameraVideoTrack(cameraId: devices[0].id)
      }
    }
  }

  /// The true cause is thrown even when RevueSDK opened another camera of the same side in place
  /// of the one asked for (it then closes it). Runs alone: that other camera could be another
  /// test's, opened for a moment.
  @Test(.wholeProcess) func cameraThatRefusesAccessThrows3017AndOneThatStallsThrows3026() async throws {
    try await TestCameras.with(["laptop-integrated", "laptop-integrated"]) { devices in
      let (other, asked) = (devices[0], devices[1])
      #expect(other.position == asked.position)
      VirtualDevices.setDenied(asked.id, true)
      await expectVideoSDKError(3017, "ERROR_CAMERA_ACCESS_DENIED_OR_DISMISSED") {
        try await VideoSDK.createCameraVideoTrack(cameraId: asked.id)
      }
      VirtualDevices.setDenied(asked.id, false)
      VirtualDevices.setStalled(asked.id, true)
      defer { VirtualDevices.setStalled(asked.id, false) }
      await expectVideoSDKError(3026, "ERROR_VIDEO_SOURCE_INITIATION_FAILED") {
        try await VideoSDK.createCameraVideoTrack(cameraId: asked.id)
      }
      // The stand-in was closed: it opens again at once.
      let track = try await VideoSDK.createCameraVideoTrack(cameraId: other.id)
      #expect(track.device == other)
      track.stop()
    }
  }

  /// Needs no camera in the process: it runs alone, once the other tests' cameras are gone.
  @Test(.wholeProcess) func noCameraThrows3021() async throws {
    let removals = CameraCapturer.deviceEvents
    if await !VideoSDK.getCameras().isEmpty {
      try await withDeadline(20, "the last camera to go") {
        for await _ in removals where await VideoSDK.getCameras().isEmpty { return }
      }
    }
    await expectVideoSDKError(3021, "ERROR_CAMERA_NOT_FOUND") {
      try await VideoSDK.createCameraVideoTrack()
    }
  }

  @MainActor @Test func unplugAfterCreationEndsTheTrackWithAnError() async throws {
    let device = try await TestCameras.add("usb-720p-webcam")
    let track = try await VideoSDK.createCameraVideoTrack(cameraId: device.id)
    let recorder = EndedRecorder()
    track.onEnded = recorder.handler
    VirtualDevices.unplug(device.id)
    let error = try #require(try await recorder.firstCall())
    #expect(error.code == 3021 && error.name == "ERROR_CAMERA_NOT_FOUND")
    #expect(track.isEnded && track.error == error)
    #expect((track.videoTrack?.capturer as? CameraCapturer)?.device == nil)
    try await TestCameras.remove([device])
  }

  /// Closing the device another way (as a room's disableCam() would) ends the track without an error.
  @MainActor @Test func stoppingTheCapturerEndsTheTrackWithoutAnError() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let track = try await VideoSDK.createCameraVideoTrack(cameraId: devices[0].id)
      let recorder = EndedRecorder()
      track.onEnded = recorder.handler
      try await track.videoTrack?.capturer?.stopCapture()
      #expect(try await recorder.firstCall() == nil)
      #expect(track.isEnded && track.error == nil && recorder.calls.count == 1)
    }
  }

  @MainActor @Test func aNewerTrackForTheSameCameraEndsTheOlderOne() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let older = try await VideoSDK.createCameraVideoTrack(cameraId: devices[0].id)
      let recorder = EndedRecorder()
      older.onEnded = recorder.handler
      let newer = try await VideoSDK.createCameraVideoTrack(encoderConfig: .h360p_w640p, cameraId: devices[0].id)
      #expect(older.isEnded && !newer.isEnded)
      #expect(try await recorder.firstCall() == nil)
      #expect((older.videoTrack?.capturer as? CameraCapturer)?.device == nil)
      let renderer = FrameStream()
      newer.videoTrack?.add(videoRenderer: renderer)
      #expect(try await renderer.next().dimensions == Dimensions(width: 640, height: 360))
      newer.stop()
    }
  }
}

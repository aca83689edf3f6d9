import Foundation
import GStreamer
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// Off means off (seed 000: "no camera frames are sent once you switch off"), and a camera that
/// a failed switch restores keeps running.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct SwitchOffTests {
  init() { TestEnvironment.prepare() }

  /// Counts the buffers of each size that leave a sender's `appsrc`.
  private static func watchSender(_ publication: LocalTrackPublication) throws -> Locked<[Int]> {
    let sizes = Locked<[Int]>([])
    let source = try #require(publication.sender!.pipeline.pipeline.element(named: "source")?.staticPad("src"))
    source.addProbe(.buffer) { _, info in
      if let size = info.buffer?.size { sizes.value.withLock { $0.append(size) } }
      return .ok
    }
    return sizes
  }

  @Test func noCameraFrameReachesARendererOrAPublicationOnceTheCameraIsSwitchedOff() async throws {
    try await TestCameras.with(["csi-camera-module"]) { cameras in
      let port = FreePorts.rtp()
      let (room, participant, capturer) = try await TestCameras.sendingRoom(
        to: port, camera: cameras[0], dimensions: .h360_169)
      let placeholder = BufferCapturerTests.frame(.nv12, 160, 90)
      participant.cameraTrack.mutePlaceholder = placeholder
      let recorder = RenderRecorder()
      participant.cameraTrack.add(videoRenderer: recorder)
      let publication = try await participant.publish(videoTrack: participant.cameraTrack)
      let sent = try Self.watchSender(publication)
      participant.setCamera(enabled: true)
      try await recorder.wait(for: 10, "camera frames")
      let stopped = capturer.events
      participant.setCamera(enabled: false)
      recorder.mark()
      let leftSender = sent.value.withLock { sizes in
        defer { sizes.removeAll() }
        return sizes.count
      }
      try await withDeadline(5, "the camera stopping") {
        for await event in stopped where event == .state(.idle) { return }
      }
      // A frame the camera had delivered before now is held back too: only placeholders follow.
      #expect(recorder.after.allSatisfy { $0 == placeholder.width }, "widths after: \(recorder.after)")
      #expect(!recorder.after.isEmpty, "the placeholder replaces the frames at once")
      // The sender's own queue (two frames at most) may still hold camera frames; nothing enters after.
      let cameraFramesAfter = sent.value.withLock { $0.filter { $0 > placeholder.buffer.size }.count }
      #expect(
        cameraFramesAfter <= 2, "\(cameraFramesAfter) camera frames left the sender after off (\(leftSender) before)")
      await room.disconnect()
    }
  }

  @Test(.wholeProcess) func noMicrophoneAudioIsRenderedOnceTheMicrophoneIsSwitchedOff() async throws {
    let device = try await VirtualDevices.microphone(name: "Switch Off")
    defer { VirtualDevices.remove(device.id) }
    let participant = Room().localParticipant!
    let track = participant.microphoneTrack
    let recorder = RenderRecorder()
    track.add(audioRenderer: recorder)
    participant.setMicrophone(enabled: true)
    try await recorder.wait(for: 10, "microphone audio")
    let stopped = track.capturer!.events
    participant.setMicrophone(enabled: false)
    recorder.mark()
    try await withDeadline(5, "the microphone stopping") {
      for await event in stopped where event == .state(.idle) { return }
    }
    #expect(recorder.after.isEmpty, "\(recorder.after.count) buffers rendered after off")
  }

  @Test func aFailedSwitchThatRestoresTheSameCameraKeepsItRunning() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { cameras in
      let track = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(device: cameras[0], dimensions: .h720_169, fps: 30))
      let capturer = try #require(track.capturer as? CameraCapturer)
      let recorder = RenderRecorder()
      track.add(videoRenderer: recorder)
      try await capturer.startCapture()
      try await recorder.wait(for: 5, "camera frames")
      let events = capturer.events
      // The same camera at another size must reopen it, which fails while it is busy.
      VirtualDevices.setBusy(cameras[0].id, true)
      let switched = try await capturer.set(options: capturer.options.copyWith(dimensions: .h360_169))
      VirtualDevices.setBusy(cameras[0].id, false)
      #expect(!switched)
      #expect(capturer.options.dimensions == .h720_169, "the options go back")
      #expect(capturer.captureState == .capturing)
      #expect(capturer.device == cameras[0])
      recorder.mark()
      try await recorder.wait(for: 5 + 15, "frames after the restore")
      #expect(recorder.after.allSatisfy { $0 == 1280 })
      try await capturer.stopCapture()
      // The restore never reported the camera lost: the first stop the events tell is ours.
      let seen = try await withDeadline(5, "the capturer's stop") {
        var seen: [VideoCapturer.Event] = []
        for await event in events {
          seen.append(event)
          if event == .state(.idle) { break }
        }
        return seen
      }
      #expect(!seen.contains { if case .interrupted = $0 { true } else { false } }, "\(seen)")
    }
  }
}

import Foundation
import GStreamer
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// Lip sync end to end: the virtual camera's flashes and the virtual microphone's beeps, sent by
/// two publications (two pipelines with base times of their own), land within ±10 ms of each
/// other in a recording GStreamer's `rtpbin` makes by the sender reports, before and after a
/// camera switch; Revue's own receiver reads the same from the reports.
@Suite(.tier(.realtime), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct AVSyncTests {
  init() { TestEnvironment.prepare() }

  /// Counts the white flashes a track renders.
  final class FlashCounter: VideoRenderer {
    private let state = Mutex((bright: false, count: 0))
    private let continuation: AsyncStream<Int>.Continuation
    let flashes: AsyncStream<Int>

    init() { (flashes, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1)) }

    func render(pixelBuffer: PixelBuffer) {
      guard let isFlash = SyncMeter.isFlash(pixelBuffer) else { return }
      let count: Int? = state.withLock { state in
        defer { state.bright = isFlash }
        guard isFlash, !state.bright else { return nil }
        state.count += 1
        return state.count
      }
      if let count { continuation.yield(count) }
    }

    /// Waits until `count` flashes were rendered.
    func wait(for count: Int) async throws {
      let flashes = self.flashes
      try await withDeadline(Double(count) + 10, "\(count) flashes of the camera") {
        for await seen in flashes where seen >= count { return }
      }
    }
  }

  /// A room publishing the virtual camera `camera` and a sync-signal microphone to `port`.
  private func sendingRoom(port: Int, camera: CaptureDevice) async throws -> (
    Room, LocalParticipant, CameraCapturer, LocalAudioTrack, FlashCounter
  ) {
    let (room, participant, capturer) = try await TestCameras.sendingRoom(
      to: port, camera: camera, dimensions: .h360_169)
    let microphone = try await VirtualDevices.microphone(name: "Sync \(port)", signal: .sync)
    let audio = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: microphone))
    let counter = FlashCounter()
    participant.cameraTrack.add(videoRenderer: counter)
    try await capturer.startCapture()
    try await audio.capturer!.startCapture()
    _ = try await participant.publish(videoTrack: participant.cameraTrack)
    _ = try await participant.publish(audioTrack: audio)
    return (room, participant, capturer, audio, counter)
  }

  @Test(.wholeProcess) func aGStreamerRecordingShowsFlashAndBeepTogether() async throws {
    try await TestCameras.with(["csi-camera-module"]) { cameras in
      let port = FreePorts.rtp(pairs: 2)
      let file = FileManager.default.temporaryDirectory.appendingPathComponent("revue-sync-\(port).mkv")
      defer { try? FileManager.default.removeItem(at: file) }
      let recording = try SyncJudge.Recording(videoPort: port, audioPort: port + 2, file: file)
      let (room, _, capturer, audio, counter) = try await sendingRoom(port: port, camera: cameras[0])
      try await counter.wait(for: 7)
      try await recording.finish()
      try await capturer.stopCapture()
      try await audio.capturer!.stopCapture()
      VirtualDevices.remove((audio.capturer as? MicrophoneCapturer)?.options.device?.id ?? "")
      await room.disconnect()
      let onsets = try await SyncJudge.onsets(in: file)
      // rtpbin lines the streams up once both sent a report: judge the flashes after that.
      let skews = onsets.skews(from: onsets.flashes.first.map { $0 + 2.5 } ?? 0)
      print("A/V skew in the GStreamer recording (ms): \(skews.map { String(format: "%.1f", $0) })")
      #expect(skews.count >= 3, "flashes \(onsets.flashes), beeps \(onsets.beeps)")
      #expect(skews.allSatisfy { abs($0) <= 10 }, "skews \(skews) ms")
    }
  }

  @Test(.wholeProcess) func theSkewStaysWithinTenMillisecondsAcrossACameraSwitch() async throws {
    try await TestCameras.with(["csi-camera-module", "csi-camera-module"]) { cameras in
      let port = FreePorts.rtp(pairs: 2)
      let file = FileManager.default.temporaryDirectory.appendingPathComponent("revue-switch-\(port).mkv")
      defer { try? FileManager.default.removeItem(at: file) }
      let recording = try SyncJudge.Recording(videoPort: port, audioPort: port + 2, file: file)
      let (room, _, capturer, audio, counter) = try await sendingRoom(port: port, camera: cameras[0])
      try await counter.wait(for: 4)
      let switched = try await capturer.set(options: capturer.options.copyWith(device: cameras[1]))
      #expect(switched)
      #expect(capturer.device == cameras[1])
      try await counter.wait(for: 9)
      try await recording.finish()
      try await capturer.stopCapture()
      try await audio.capturer!.stopCapture()
      VirtualDevices.remove((audio.capturer as? MicrophoneCapturer)?.options.device?.id ?? "")
      await room.disconnect()
      let onsets = try await SyncJudge.onsets(in: file)
      let start = try #require(onsets.flashes.first, "beeps \(onsets.beeps)")
      let before = onsets.skews(from: start + 2.5).prefix(2)
      // The switch comes after the fourth flash; the flashes from the sixth on are the new camera's.
      let after = onsets.skews(from: onsets.flashes.dropFirst(5).first ?? .infinity)
      print("A/V skew before the switch (ms): \(before.map { String(format: "%.1f", $0) })")
      print("A/V skew after the switch (ms): \(after.map { String(format: "%.1f", $0) })")
      #expect(!before.isEmpty && after.count >= 3, "flashes \(onsets.flashes), beeps \(onsets.beeps)")
      #expect((before + after).allSatisfy { abs($0) <= 10 }, "before \(before) ms, after \(after) ms")
    }
  }

  @Test(.wholeProcess) func revuesOwnReceiverReadsTheSkewFromTheReports() async throws {
    try await TestCameras.with(["csi-camera-module"]) { cameras in
      let port = FreePorts.rtp(pairs: 2)
      let (room, _, capturer, audio, counter) = try await sendingRoom(port: port, camera: cameras[0])
      let receiving = Room()
      let remote = try await receiving.listen(sdp: room.sdp, on: "127.0.0.1", measuresAVSync: true)
      try await counter.wait(for: 6)
      let skew = try #require(remote.avSyncMilliseconds, "no flash and beep pair arrived")
      print("A/V skew at Revue's receiver (ms): \(String(format: "%.2f", skew))")
      #expect(abs(skew) <= 10)
      try await capturer.stopCapture()
      try await audio.capturer!.stopCapture()
      VirtualDevices.remove((audio.capturer as? MicrophoneCapturer)?.options.device?.id ?? "")
      await room.disconnect()
      await receiving.disconnect()
    }
  }
}

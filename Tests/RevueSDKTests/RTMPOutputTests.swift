import Foundation
import RevueLab
import RevueProcess
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@testable import RevueSDK

/// Issue 31's RTMP: a camera and a microphone sent by `StreamOutput` in FLV (H.264, AAC) to a
/// real RTMP server, Debian's nginx with its RTMP module, started here on loopback with a
/// config of its own in a temporary directory; it records what it is sent, which ffmpeg reads
/// back. A server restart in the middle: the output connects again within 5 s.
@Suite(.tier(.interop), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct RTMPOutputTests {
  init() { TestEnvironment.prepare() }

  /// A camera at 640×480, 30 fps, and a virtual microphone, capturing; the microphone's id, to
  /// remove it after (a test that takes the only microphone waits until no other is listed).
  static func tracks(_ camera: CaptureDevice) async throws -> (LocalVideoTrack, LocalAudioTrack, String) {
    let track = try await RTSPBroadcastTests.camera(camera)
    let device = try await TestCameras.addMicrophone("RTMP Mic")
    let microphone = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: device))
    try await microphone.capturer?.startCapture()
    return (track, microphone, device.id)
  }

  /// 5 s of a camera and its microphone: at least 95 % of the frames sent are in nginx's
  /// recording, and decode.
  @Test func nginxRecordsTheFramesSent() async throws {
    let nginx = try NginxRTMP()
    defer { try? FileManager.default.removeItem(at: nginx.directory) }
    let server = try await nginx.start()
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let (camera, microphone, microphoneID) = try await Self.tracks(devices[0])
      defer { VirtualDevices.remove(microphoneID) }
      let counter = FrameCounter(until: 150)
      camera.add(videoRenderer: counter)
      let output = try StreamOutput(
        track: camera, audio: microphone, to: .rtmp(URL(string: "rtmp://127.0.0.1:\(nginx.port)/live/key")!),
        encoding: VideoEncoding(maxBitrate: 1_000_000, maxFps: 30))
      try await server.waitForError(containing: "publish: name='key'", within: 10)
      try await withDeadline(20, "150 frames captured") { await counter.waitForAll() }
      await output.stop()
      try await server.waitForError(containing: "disconnect", within: 10)
      _ = await server.stop()
      try await camera.capturer?.stopCapture()
      try await microphone.capturer?.stopCapture()
      let (sent, encoded) = (output.statistics.framesSent, output.statistics.framesEncoded)
      let recorded = try await nginx.recordedFrames()
      print("RTMP: nginx recorded \(recorded) of \(encoded) frames encoded (\(sent) sent)")
      #expect(recorded.count == 1 && output.statistics.reconnections == 0)
      #expect(encoded <= sent && encoded >= sent * 9 / 10, "\(encoded) of \(sent) encoded")
      #expect(Double(recorded.reduce(0, +)) >= Double(encoded) * 0.95, "\(recorded) of \(encoded)")
    }
  }

  /// An output started before its server is up reports the refused connection and tries
  /// again, after 1 s, then 2 s, then 4 s: it publishes once nginx is there, and says so
  /// (`.reconnected`, when its sink has sent).
  @Test func aServerNotUpYetIsTriedAgain() async throws {
    let nginx = try NginxRTMP()
    defer { try? FileManager.default.removeItem(at: nginx.directory) }
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let camera = try await RTSPBroadcastTests.camera(devices[0])
      let output = try StreamOutput(
        track: camera, to: .rtmp(URL(string: "rtmp://127.0.0.1:\(nginx.port)/live/key")!))
      // The refusal comes within milliseconds, maybe before this subscribes: then the next
      // attempt's (after 2 s) is the one seen.
      let events = output.events
      try await withDeadline(10, "an attempt again") {
        for await event in events {
          guard case .reconnecting(let attempt, let wait) = event else { continue }
          #expect(wait == .seconds(1 << (attempt - 1)), "attempt \(attempt) after \(wait)")
          return
        }
      }
      let server = try await nginx.start()
      try await server.waitForError(containing: "publish: name='key'", within: 10)
      try await withDeadline(10, "the output to say it is connected again") {
        for await event in events {
          if case .reconnected = event { return }
        }
      }
      #expect(output.state == .running && output.statistics.reconnections >= 1)
      await output.stop()
      _ = await server.stop()
      try await camera.capturer?.stopCapture()
    }
  }

  /// nginx stopped in the middle and started again: the output reports the fault and its
  /// reconnection, and publishes again within 5 s of the restart; the second recording holds
  /// what was sent after it.
  @Test func aServerRestartResumesWithinFiveSeconds() async throws {
    let nginx = try NginxRTMP()
    defer { try? FileManager.default.removeItem(at: nginx.directory) }
    let first = try await nginx.start()
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let (camera, microphone, microphoneID) = try await Self.tracks(devices[0])
      defer { VirtualDevices.remove(microphoneID) }
      let output = try StreamOutput(
        track: camera, audio: microphone, to: .rtmp(URL(string: "rtmp://127.0.0.1:\(nginx.port)/live/key")!),
        encoding: VideoEncoding(maxBitrate: 1_000_000, maxFps: 30))
      let events = output.events
      try await first.waitForError(containing: "publish: name='key'", within: 10)
      let before = FrameCounter(until: 60)
      camera.add(videoRenderer: before)
      try await withDeadline(10, "60 frames captured") { await before.waitForAll() }
      camera.remove(videoRenderer: before)
      let stopped = ContinuousClock.now
      _ = await first.stop()
      let second = try await nginx.start()
      let restarted = ContinuousClock.now
      try await second.waitForError(containing: "publish: name='key'", within: 10)
      let resumed = ContinuousClock.now
      let encodedBefore = output.statistics.framesEncoded
      let after = FrameCounter(until: 90)
      camera.add(videoRenderer: after)
      try await withDeadline(10, "90 more frames captured") { await after.waitForAll() }
      await output.stop()
      try await second.waitForError(containing: "disconnect", within: 10)
      _ = await second.stop()
      try await camera.capturer?.stopCapture()
      try await microphone.capturer?.stopCapture()
      // Every event up to the end (the stop's state change).
      let seen = try await withDeadline(5, "the output's events up to its end") {
        var seen: [StreamEvent] = []
        for await event in events {
          seen.append(event)
          if case .state = event { break }
        }
        return seen
      }
      let recorded = try await nginx.recordedFrames()
      let encodedAfter = output.statistics.framesEncoded - encodedBefore
      print(
        "RTMP: published again \(resumed - restarted) after nginx restarted (\(resumed - stopped) after it stopped);"
          + " recorded \(recorded) frames, \(encodedAfter) encoded after the restart")
      #expect(resumed - restarted < .seconds(5))
      #expect(seen.contains { if case .reconnecting(attempt: 1, _) = $0 { true } else { false } }, "\(seen)")
      #expect(seen.contains { if case .reconnected = $0 { true } else { false } }, "\(seen)")
      #expect(output.statistics.reconnections >= 1 && output.statistics.pipelinesStarted >= 2)
      #expect(recorded.count == 2, "\(recorded)")
      #expect(recorded.count == 2 && Double(recorded[1]) >= Double(encodedAfter) * 0.95, "\(recorded), \(encodedAfter)")
    }
  }
}

import Foundation
import GStreamer
import RevueLab
import RevueSDK
import RevueTestSupport
import Testing

/// SRTP (RFC 3711) with SDES keys: Revue to Revue, wrong keys, the SDP's `a=crypto`, and keys
/// kept out of every message.
@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(1))) struct SRTPTests {
  init() { TestEnvironment.prepare() }

  /// A fixed key of each suite's length (tests only).
  static func key(_ suite: SRTPKey.Suite = .aesCM128HMACSHA1_80, byte: UInt8 = 7) throws -> SRTPKey {
    try SRTPKey(bytes: (0..<suite.keyLength).map { UInt8($0) &* 31 &+ byte }, suite: suite)
  }

  /// The query of an srtp:// URL that carries `key`.
  static func query(_ key: SRTPKey) -> String {
    let encoded = key.base64.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    return "key=\(encoded)" + (key.suite == .aeadAES128GCM ? "&suite=aes-128-gcm" : "")
  }

  /// A room sending the virtual camera `device` at 360p to `url`, publishing at once.
  static func publish(
    to url: URL, camera device: CaptureDevice, codec: VideoCodec = .vp8
  ) async throws -> (Room, CameraCapturer, LocalTrackPublication) {
    let room = Room()
    try await room.connect(to: url)
    let participant = try #require(room.localParticipant)
    let capturer = try #require(participant.cameraTrack.capturer as? CameraCapturer)
    _ = try await capturer.set(options: capturer.options.copyWith(device: device, dimensions: .h360_169))
    try await capturer.startCapture()
    let publication = try await participant.publish(
      videoTrack: participant.cameraTrack, options: VideoPublishOptions(preferredCodec: codec))
    return (room, capturer, publication)
  }

  @Test(arguments: [SRTPKey.Suite.aesCM128HMACSHA1_80, .aeadAES128GCM])
  func revueToRevueOverSRTP(_ suite: SRTPKey.Suite) async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let key = try Self.key(suite)
      let receiving = Room()
      let remote = try await receiving.listen(on: URL(string: "srtp://127.0.0.1:\(port)?\(Self.query(key))")!)
      let renderer = FrameStream()
      remote.videoTrack!.add(videoRenderer: renderer)
      let (sending, capturer, publication) = try await Self.publish(
        to: URL(string: "srtp://127.0.0.1:\(port)?\(Self.query(key))")!, camera: devices[0])
      _ = try await renderer.next { _ in renderer.count >= 30 }
      // Receiver reports come back through SRTCP: the sender reads them.
      try await withDeadline(20, "a receiver report at the sender") {
        for await _ in publication.receiverReports() { return }
      }
      let statistics = remote.videoTrack!.statistics
      print("SRTP \(suite): \(statistics.framesDecoded) frames, \(statistics.packetsReceived) packets,"
        + " \(statistics.packetsUnauthenticated) unauthenticated; RTT \(String(describing: publication.statistics.roundTripTime))")
      #expect(statistics.framesDecoded >= 30)
      #expect(statistics.packetsUnauthenticated == 0)
      #expect(publication.statistics.roundTripTime != nil)
      let sdp = sending.sdp
      #expect(sdp.contains("m=video \(port) RTP/SAVPF 96"))
      #expect(sdp.contains("a=crypto:1 \(suite.rawValue) inline:\(key.base64)"))
      try await capturer.stopCapture()
      await sending.disconnect()
      await receiving.disconnect()
    }
  }

  /// A receiver with another key than the sender's decodes nothing, counts what it drops and
  /// goes on; a sender with its key that arrives later on the same port, beside the first, is
  /// decoded.
  @Test func aWrongKeyDecodesNothingAndTheRightSenderStillGetsThrough() async throws {
    try await TestCameras.with(["csi-camera-module", "usb-720p-webcam"]) { devices in
      let port = FreePorts.rtp()
      let right = try Self.key(byte: 1)
      let wrong = try Self.key(byte: 2)
      let log = RevueLog.entries(from: .debug)
      let logged = Task {
        var entries: [String] = []
        for await entry in log { entries.append(entry.description) }
        return entries
      }
      let receiving = Room()
      let remote = try await receiving.listen(on: URL(string: "srtp://127.0.0.1:\(port)?\(Self.query(right))")!)
      let renderer = FrameStream()
      remote.videoTrack!.add(videoRenderer: renderer)
      let track = remote.videoTrack!

      let (wrongRoom, wrongCapturer, _) = try await Self.publish(
        to: URL(string: "srtp://127.0.0.1:\(port)?\(Self.query(wrong))")!, camera: devices[0])
      let sent = FrameStream()
      wrongRoom.localParticipant!.cameraTrack.add(videoRenderer: sent)
      // Two seconds of the wrong sender's frames have gone out.
      _ = try await sent.next("60 frames sent with the wrong key") { _ in sent.count >= 60 }
      let refused = track.statistics
      print("wrong key: \(refused.packetsReceived) packets came, \(refused.packetsUnauthenticated) unauthenticated,"
        + " \(refused.framesDecoded) frames decoded")
      #expect(renderer.count == 0 && refused.framesDecoded == 0)
      #expect(refused.packetsUnauthenticated > 50)
      #expect(track.state == .running)

      // The sender with the receiver's key, on the same port, while the other goes on.
      let (rightRoom, rightCapturer, _) = try await Self.publish(
        to: URL(string: "srtp://127.0.0.1:\(port)?\(Self.query(right))")!, camera: devices[1])
      _ = try await renderer.next("frames of the sender with the right key") { _ in renderer.count >= 20 }
      let after = track.statistics
      print("then the right key: \(after.framesDecoded) frames decoded, \(after.packetsUnauthenticated) unauthenticated")
      #expect(after.packetsUnauthenticated > refused.packetsUnauthenticated, "the wrong sender still counted")
      #expect(renderer.count >= 20)
      try await rightCapturer.stopCapture()
      try await wrongCapturer.stopCapture()
      await wrongRoom.disconnect()
      await rightRoom.disconnect()
      await receiving.disconnect()

      // Neither key is in any log entry, the statistics or the key's description.
      logged.cancel()
      let entries = await logged.value
      #expect(!entries.isEmpty)
      for key in [right, wrong] {
        #expect(!entries.contains { $0.contains(key.base64) })
        #expect(!"\(after)".contains(key.base64))
        #expect(!"\(key)".contains(key.base64) && !String(reflecting: key).contains(key.base64))
      }
    }
  }

  /// NACK and RTX keep working over SRTP: the receiver's NACKs (built by Revue, sent at once)
  /// are SRTCP, which the sender authenticates, and the retransmissions are SRTP. Judged as
  /// LossRecoveryTests judge plain RTP, through 5% loss each way with 30 ± 10 ms. It runs
  /// alone, as those do: two decoders and an encoder.
  @Test(.wholeProcess) func nackRecoversLossOverSRTP() async throws {
    let link = LinkConditions(loss: 0.05, delay: .milliseconds(30), jitter: .milliseconds(10))
    let trial = LinkTrial(
      codec: .vp8, width: 640, height: 480, link: link, recovery: .nack, frames: 240, srtp: try Self.key())
    let result = try await trial.run(port: FreePorts.rtp(pairs: 3))
    print("\(trial): \(result)")
    #expect(result.forward.lost > 0 && result.backward.lost > 0, "the link lost packets both ways")
    #expect(result.received.nacksSent > 0 && result.received.packetsRetransmitted > 0, "\(result)")
    #expect((result.sent.packetsRetransmitted ?? 0) > 0, "the sender took no NACK: \(result)")
    #expect(result.received.packetsUnauthenticated == 0, "\(result)")
    #expect(result.verdict.fractionIntact >= 0.98, "\(result)")
    #expect(result.verdict.longestFreeze <= .milliseconds(200), "\(result)")
  }

  /// ffmpeg reads the room's SDP (`RTP/SAVPF`, `a=crypto` with AES_CM_128_HMAC_SHA1_80) and
  /// decodes the SRTP stream (it takes `srtp` in its protocol whitelist).
  @Test(arguments: [VideoCodec.vp8, .h264]) func ffmpegPlaysTheSRTPRoomSDP(_ codec: VideoCodec) async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let key = try Self.key()
      let room = Room()
      try await room.connect(to: URL(string: "srtp://127.0.0.1:\(port)?\(Self.query(key))")!)
      let participant = try #require(room.localParticipant)
      let capturer = try #require(participant.cameraTrack.capturer as? CameraCapturer)
      _ = try await capturer.set(options: capturer.options.copyWith(device: devices[0], dimensions: .h360_169))
      _ = try await participant.publish(
        videoTrack: participant.cameraTrack, options: VideoPublishOptions(preferredCodec: codec))
      let file = FileManager.default.temporaryDirectory.appendingPathComponent("revue-srtp-\(port).sdp")
      try room.sdp.write(to: file, atomically: true, encoding: .utf8)
      defer { try? FileManager.default.removeItem(at: file) }
      let ffmpeg = try Subprocess(
        URL(fileURLWithPath: "/usr/bin/ffmpeg"),
        [
          "-hide_banner", "-loglevel", "fatal", "-protocol_whitelist", "file,udp,rtp,srtp", "-i", file.path,
          "-frames:v", "30", "-f", "null", "-",
        ])
      try await capturer.startCapture()
      let exit = try await ffmpeg.exit(within: 30)
      #expect(exit.status == 0, "ffmpeg did not decode 30 frames of the SRTP stream: \(exit.error)")
      try await capturer.stopCapture()
      await room.disconnect()
    }
  }
}

import Foundation
import GStreamer
import RevueLab
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// What a publication reads off the receiver reports, in the right units and on the right
/// clock: the round-trip time on the monotonic clock (a step of the wall clock moves neither it
/// nor the bitrate), the jitter of an Opus stream at its 48 kHz.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct ReceiverReportTests {
  init() { TestEnvironment.prepare() }

  /// Rewrites the NTP time of every sender report in an RTCP compound, `seconds` earlier.
  static func shifted(_ bytes: [UInt8], seconds: UInt32) -> [UInt8] {
    var bytes = bytes
    var offset = 0
    while offset + 12 <= bytes.count {
      if bytes[offset + 1] == 200 {  // SR: the NTP time's seconds at bytes 8-11
        let ntpSeconds = bytes[offset + 8..<offset + 12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } &- seconds
        for index in 0..<4 { bytes[offset + 8 + index] = UInt8(truncatingIfNeeded: ntpSeconds >> (24 - 8 * index)) }
      }
      offset += 4 * (Int(bytes[offset + 2]) << 8 + Int(bytes[offset + 3]) + 1)
    }
    return bytes
  }

  /// A wall-clock step of 5 s forward, made as rtpbin sees it: once the round trip is known,
  /// every sender report leaves with an NTP time 5 s behind the wall clock, as if the clock had
  /// stepped right after stamping it, so the receiver's reports echo times 5 s old. The round
  /// trip stays what loopback takes and congestion control cuts nothing (read against the wall
  /// clock, the round trip was 5 s and the target was cut for delay).
  @Test func aWallClockStepMovesNeitherTheRoundTripNorTheBitrate() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let (room, participant, capturer) = try await TestCameras.sendingRoom(
        to: port, camera: devices[0], dimensions: .h360_169)
      // A target well above what the encoder sends: a round trip read as queueing cuts it.
      let publication = try await participant.publish(
        videoTrack: participant.cameraTrack,
        options: VideoPublishOptions(encoding: VideoEncoding(maxBitrate: 3_000_000, maxFps: 30)))
      let rtpbin = try #require(publication.sender?.pipeline.pipeline.element(named: "rtpbin") as? Bin)
      let session = try #require(rtpbin.elements.first { $0.factoryName == "rtpsession" })
      let stepped = Atomic(false)
      try #require(session.staticPad("send_rtcp_src")).addProbe(.buffer) { _, info in
        guard stepped.load(ordering: .relaxed), let buffer = info.buffer else { return .ok }
        info.buffer = Buffer(copying: Self.shifted(buffer.bytes, seconds: 5))
        return .ok
      }
      // Revue's receiver, which reports four times a second (rtpbin's own, once in 5 s).
      let receiving = Room()
      _ = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
      let reports = publication.receiverReports()
      try await capturer.startCapture()
      try await withDeadline(20, "a receiver report with a round-trip time") {
        for await _ in reports where publication.statistics.roundTripTime != nil { return }
      }
      let before = publication.statistics
      stepped.store(true, ordering: .relaxed)
      let reportsAfter = publication.receiverReports()
      // The reports that follow, four a second: most echo a sender report stamped after the step.
      let roundTrips = try await withDeadline(20, "8 receiver reports after the step") {
        var roundTrips: [Duration] = []
        for await _ in reportsAfter {
          roundTrips.append(publication.statistics.roundTripTime ?? .zero)
          if roundTrips.count == 8 { break }
        }
        return roundTrips
      }
      let after = publication.statistics
      await receiving.disconnect()
      try await capturer.stopCapture()
      await participant.unpublish(publication: publication)
      withExtendedLifetime(room) {}
      let longest = try #require(roundTrips.max())
      #expect(longest < .milliseconds(100), "round trips after the step: \(roundTrips)")
      if case .delay(let roundTrip) = after.targetBitrateReason {
        Issue.record(
          "the target was cut for a delay of \(roundTrip): \(before.targetBitrate ?? 0) → \(after.targetBitrate ?? 0)")
      }
    }
  }

  /// Sends an RTCP receiver report from `socket` to `port` on loopback, with one report block
  /// on `ssrc` saying `jitter` (in RTP timestamp units).
  static func sendReceiverReport(from socket: UDPSender, to port: Int, about ssrc: UInt32, jitter: UInt32) {
    // Header (RR, one block, 7 words after the first), the reporter, then the block: SSRC,
    // fraction and count lost, highest sequence, jitter, LSR, DLSR.
    let packet: [UInt8] =
      [0x81, 201, 0, 7] + bigEndianBytes(UInt32(0x1234_5678)) + bigEndianBytes(ssrc) + bigEndianBytes(UInt32(0))
      + bigEndianBytes(UInt32(1)) + bigEndianBytes(jitter) + bigEndianBytes(UInt32(0)) + bigEndianBytes(UInt32(0))
    socket.send(packet, to: "127.0.0.1", port: port)
  }

  /// A receiver's jitter of 4800 on an Opus stream is 100 ms: RTP timestamps of Opus tick at
  /// 48 kHz (RFC 7587), not at video's 90 kHz, which read it as 53.3 ms.
  @Test func theJitterOfAnOpusStreamIsReadAt48kHz() async throws {
    let microphone = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(microphone.id) }
    let room = Room()
    let participant = try #require(room.localParticipant)
    let port = FreePorts.rtp()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let track = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: microphone))
    let audio = try await participant.publish(audioTrack: track, options: AudioPublishOptions(dtx: false))
    // The report comes from the destination's RTCP port, as a receiver's would.
    let socket = try UDPSender(from: "127.0.0.1", port: port + 1)
    let reports = audio.receiverReports()
    Self.sendReceiverReport(from: socket, to: audio.localRTCPPort, about: audio.ssrc, jitter: 4800)
    try await withDeadline(10, "the receiver report") {
      for await _ in reports { return }
    }
    #expect(audio.statistics.jitter == .milliseconds(100))
    await room.disconnect()
  }
}

import Foundation
import RevueLab
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Testing

/// A sender's RTCP socket takes feedback from its destination only. Receiver reports and
/// feedback steer the encoder: a 100% loss report takes the bitrate to the floor, and NACKs and
/// PLIs cost retransmissions and keyframes. Another host (127.0.0.2 here, a loopback address of
/// its own) flooding the port with them changes nothing; the same flood from the receiver's
/// host is read (its keyframe requests reach the encoder; the loss it claims with no queue
/// building is not congestion, issue 26).
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct FeedbackSourceTests {
  init() { TestEnvironment.prepare() }

  /// RTCP compounds that claim the worst about the stream `victim`: a receiver report of 100%
  /// loss, a NACK of 16 packets and a PLI, from the made-up reporter `reporter`.
  static func hostileFeedback(about victim: UInt32, reporter: UInt32, round: Int) -> [UInt8] {
    let report =
      [0x81, 201, 0, 7] + bigEndianBytes(reporter) + bigEndianBytes(victim) + [0xFF, 0x00, 0xFF, 0xFF]
      + bigEndianBytes(UInt32(round))
      + [UInt8](repeating: 0, count: 12)
    var lost: [UInt8] = []
    for index in 0..<16 { lost += bigEndianBytes(UInt16(truncatingIfNeeded: round * 16 + index)) + [0xFF, 0xFF] }
    let nack: [UInt8] = [0x81, 205, 0, 18] + bigEndianBytes(reporter) + bigEndianBytes(victim) + lost
    let pli: [UInt8] = [0x81, 206, 0, 2] + bigEndianBytes(reporter) + bigEndianBytes(victim)
    return report + nack + pli
  }

  /// Sends `count` hostile compounds from `source` to the sender's RTCP port, 1 ms apart.
  static func flood(from source: String, to publication: LocalTrackPublication, count: Int) async throws {
    let socket = try UDPSender(from: source)
    for round in 0..<count {
      #expect(
        socket.send(
          hostileFeedback(about: publication.ssrc, reporter: 0xBAD0_0000 + UInt32(count), round: round),
          to: "127.0.0.1", port: publication.localRTCPPort))
      try await Task.sleep(for: .milliseconds(1))  // paces-on-purpose: a flood's rate
    }
  }

  /// Waits for `count` receiver reports at the sender (a report comes every 250 ms or so).
  static func reports(_ count: Int, at publication: LocalTrackPublication) async throws {
    _ = try await collect(count, of: publication.receiverReports(), within: 20, "\(count) receiver reports")
  }

  @Test func feedbackFromAnotherHostChangesNothing() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let receiving = Room()
      let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
      let renderer = FrameStream()
      remote.videoTrack!.add(videoRenderer: renderer)
      let (room, capturer, publication) = try await SRTPTests.publish(
        to: URL(string: "rtp://127.0.0.1:\(port)")!, camera: devices[0])
      _ = try await renderer.next("frames at the receiver") { _ in renderer.count >= 15 }
      try await Self.reports(2, at: publication)
      let before = publication.statistics

      try await Self.flood(from: "127.0.0.2", to: publication, count: 300)
      try await Self.reports(3, at: publication)
      let foreign = publication.statistics
      print(
        "after another host's flood: \(before.targetBitrate ?? 0) → \(foreign.targetBitrate ?? 0) b/s (\(String(describing: foreign.targetBitrateReason))), keyframe requests \(before.keyframeRequests) → \(foreign.keyframeRequests)"
      )
      #expect((foreign.targetBitrate ?? 0) >= (before.targetBitrate ?? 0), "\(before) → \(foreign)")
      #expect(foreign.keyframeRequests - before.keyframeRequests <= 2, "\(before) → \(foreign)")

      // The same from the receiver's host: taken.
      try await Self.flood(from: "127.0.0.1", to: publication, count: 100)
      try await Self.reports(1, at: publication)
      let own = publication.statistics
      print(
        "after the receiver's host's flood: \(own.targetBitrate ?? 0) b/s (\(String(describing: own.targetBitrateReason))), keyframe requests \(own.keyframeRequests)"
      )
      #expect(own.keyframeRequests - foreign.keyframeRequests >= 1, "\(foreign) → \(own)")
      #expect(remote.videoTrack!.state == .running)
      try await capturer.stopCapture()
      await room.disconnect()
      await receiving.disconnect()
    }
  }
}

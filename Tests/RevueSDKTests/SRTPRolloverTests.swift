import Foundation
import GStreamer
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// A receiver that starts after an SRTP sender's sequence number wrapped: its rollover counter is
/// 1 or more, and a receiver that guessed 0 failed every packet's authentication for good, as if
/// the key were wrong (after about six minutes of 720p this is certain).
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct SRTPRolloverTests {
  init() { TestEnvironment.prepare() }

  /// The sender's report of packets sent and a packet's sequence number give its rollover
  /// counter, most likely first.
  @Test func rolloverCountersFromASenderReport() {
    typealias Streams = SRTPKey.DecoderStreams
    // Started at 65,506: 100 packets later the sequence number is 70, the counter 1.
    #expect(Streams.rolloverCounters(packetsSent: 100, sequence: 70) == [1, 2, 0])
    // Started at 20, no wrap yet.
    #expect(Streams.rolloverCounters(packetsSent: 100, sequence: 150) == [0, 1])
    // 10 laps in: 10 × 65,536 + 3,000 packets sent from 500.
    #expect(Streams.rolloverCounters(packetsSent: 658_360, sequence: 3_500) == [10, 11, 9])
    // Packets sent since the report, across a wrap: the counter after is the second guess.
    #expect(Streams.rolloverCounters(packetsSent: 65_530, sequence: 2)[0...1] == [1, 2])
  }

  /// A sender of GStreamer's own (`srtpenc`, its payloader started 10 packets before the wrap),
  /// reporting every 250 ms: a receiver started once it wrapped decodes within 2 s, and so does
  /// the same receiver started again.
  @Test func aReceiverStartedAfterTheSequenceNumberWrappedDecodes() async throws {
    let port = FreePorts.rtp()
    let keyBytes = (0..<30).map { UInt8($0) &* 31 &+ 5 }
    let key = try SRTPKey(bytes: keyBytes)
    let hex = keyBytes.map { String(format: "%02x", $0) }.joined()
    let sender = try Pipeline(
      parsing: """
        rtpbin name=rtpbin rtp-profile=avpf \
        videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=30/1 \
        ! vp8enc deadline=1 keyframe-max-dist=15 ! rtpvp8pay pt=96 seqnum-offset=65525 ! rtpbin.send_rtp_sink_0 \
        srtpenc name=srtpenc key=\(hex) \
        rtpbin.send_rtp_src_0 ! srtpenc.rtp_sink_0 srtpenc.rtp_src_0 ! udpsink name=rtpout host=127.0.0.1 port=\(port) \
        rtpbin.send_rtcp_src_0 ! srtpenc.rtcp_sink_0 srtpenc.rtcp_src_0 \
        ! udpsink host=127.0.0.1 port=\(port + 1) sync=false async=false
        """)
    let rtpbin = try #require(sender.element(named: "rtpbin") as? Bin)
    for session in rtpbin.elements where session.factoryName == "rtpsession" {
      try session.set("rtcp-min-interval", UInt64(250_000_000))
    }
    let (sent, counted) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
    let packets = Mutex(0)
    // Payloaders push a frame of several packets as one list.
    sender.element(named: "rtpout")?.staticPad("sink")?.addProbe([.buffer, .bufferList]) { _, info in
      let count = info.listSizes?.count ?? 1
      counted.yield(
        packets.withLock {
          $0 += count; return $0
        })
      return .ok
    }
    try sender.play()
    defer { _ = try? sender.setState(.null) }
    // 60 packets: 50 past the wrap.
    try await withDeadline(20, "60 packets sent") { for await count in sent where count >= 60 { return } }
    for attempt in ["a receiver started after the wrap", "the receiver started again"] {
      let started = ContinuousClock.now
      let room = Room()
      let remote = try await room.listen(
        on: URL(
          string:
            "srtp://127.0.0.1:\(port)?key=\(key.base64.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")!
      )
      let renderer = FrameStream()
      remote.videoTrack!.add(videoRenderer: renderer)
      _ = try await renderer.next("\(attempt): a frame", within: 10)
      let elapsed = ContinuousClock.now - started
      print("SRTP rollover: \(attempt) decoded its first frame after \(elapsed)")
      #expect(elapsed < .seconds(2), "\(attempt): \(elapsed)")
      await room.disconnect()
    }
  }
}

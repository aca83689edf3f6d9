import GStreamer
import GStreamerCheck
import RevueLab
import RevueTestSupport
import Testing

@testable import RevueSDK

/// Issue 14's hostile input at harness speed: the datagrams of every ``HostileCase`` (in turn,
/// five beside each packet of a VP8 stream), as they reach a receiver from another host, go
/// through what the receiver does before its RTP session — the RTP header read
/// (`Buffer.rtpHeader`), the RTCP reads, the sender latch (`RTPReceiver.Counters.admit`,
/// ``SenderLatch``) — and what it lets through goes into its jitter buffer
/// (``RTPReceiver/jitterBuffer(latency:nack:)``) in a harness on a test clock. Milliseconds,
/// where ``HostileInputTests`` take seconds of real packets over sockets.
@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(1))) struct HostileHarnessTests {
  init() { TestEnvironment.prepare() }

  /// The stream's sender, and the host the hostile datagrams come from.
  static let (sender, stranger): (SenderLatch.Address, SenderLatch.Address) = (
    ("127.0.0.1", 40_000), ("192.0.2.7", 40_002)
  )

  @Test func onlyTheFollowedSendersPacketsReachTheJitterBufferAllOfThemInOrder() throws {
    let harness = try JitterBufferTests.harness()
    var counters = RTPReceiver.Counters()
    let ssrc = try #require(JitterBufferTests.packet(0).rtpHeader?.ssrc)
    var traffic = HostileTraffic(HostileCase.allCases, victimSSRC: ssrc)
    let start = ContinuousClock.now
    var (hostile, admitted) = (HostileTraffic.Sent(), HostileTraffic.Sent())
    let frames: UInt16 = 300
    for sequence in 0..<frames {
      let time = JitterBufferTests.due(sequence)
      #expect(harness.setTime(ClockTime(time)))
      var packet = JitterBufferTests.packet(sequence)
      packet.dts = ClockTime(time)
      let header = try #require(packet.rtpHeader)
      let verdict = counters.admit(
        ssrc: header.ssrc, sequence: header.sequence, payloadType: header.payloadType, of: 96, from: Self.sender,
        at: start + time)
      #expect(verdict.take, "the stream's packet \(sequence)")
      try harness.push(packet)
      for _ in 0..<5 {
        let datagram = traffic.next()
        let buffer = Buffer(copying: datagram.bytes)
        if datagram.toRTCP {
          hostile.rtcp += 1
          // What the receiver reads of RTCP before it judges it: none of it may trap.
          _ = (buffer.rtcpSenderInfo, buffer.rtcpSourceDescriptions)
          let reporter = buffer.rtcpReporterSSRC
          if counters.latch.control(reporterSSRC: reporter, from: Self.stranger, at: start + time) == .take {
            admitted.rtcp += 1
          }
          continue
        }
        hostile.rtp += 1
        guard let header = buffer.rtpHeader else { continue }
        let (take, _) = counters.admit(
          ssrc: header.ssrc, sequence: header.sequence, payloadType: header.payloadType, of: 96, from: Self.stranger,
          at: start + time)
        if take {
          admitted.rtp += 1
          var stray = buffer
          stray.dts = ClockTime(time)
          try harness.push(stray)
        }
      }
    }
    print("\(hostile) hostile datagrams beside \(frames) packets: \(admitted) let through")
    #expect(hostile.rtp > 1000 && hostile.rtcp > 200, "every case's datagrams: \(hostile)")
    #expect(admitted == HostileTraffic.Sent(), "from another host, nothing but the sender's own: \(admitted)")
    #expect(try JitterBufferTests.passed(Int(frames), from: harness) == Array(0..<frames))
    #expect(counters.mediaSSRC == ssrc)
  }
}

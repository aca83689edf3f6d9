import Foundation
import Testing

@testable import RevueSDK

/// ``SenderLatch``: which sender a receiver follows when more than one sends to its port.
@Suite(.tier(.unit), .sharedProcess) struct SenderLatchTests {
  static let sender: SenderLatch.Address = ("127.0.0.1", 40000)
  static let stranger: SenderLatch.Address = ("127.0.0.1", 40100)
  static let start = ContinuousClock.now

  /// `milliseconds` after the start.
  static func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

  /// Judges a media packet (payload type 96) of `ssrc` and `sequence` from `source` at
  /// `milliseconds` after the start.
  static func media(
    _ latch: inout SenderLatch, _ ssrc: UInt32, _ sequence: UInt16, from source: SenderLatch.Address = sender,
    at milliseconds: Int, payloadType: Int = 96
  ) -> SenderLatch.Verdict {
    latch.media(ssrc: ssrc, sequence: sequence, payloadType: payloadType, of: 96, from: source, at: at(milliseconds))
  }

  static let hold = Int(SenderLatch.hold / .milliseconds(1))

  @Test func theFirstSenderIsFollowedAndOthersAreDroppedWhileItIsLive() {
    var latch = SenderLatch()
    #expect(Self.media(&latch, 1, 100, at: 0) == .newSender)
    #expect(Self.media(&latch, 1, 101, at: 10) == .pass)
    // A second sender (in sequence too), and a stranger with the sender's SSRC.
    #expect(Self.media(&latch, 2, 500, from: Self.stranger, at: 20) == .drop)
    #expect(Self.media(&latch, 2, 501, from: Self.stranger, at: 25) == .drop)
    #expect(Self.media(&latch, 1, 102, from: Self.stranger, at: 30) == .drop)
    // Retransmissions (their own SSRC) from the sender pass; from anyone else they do not.
    #expect(Self.media(&latch, 7, 3, at: 40, payloadType: 97) == .pass)
    #expect(Self.media(&latch, 7, 3, from: Self.stranger, at: 40, payloadType: 97) == .drop)
    // The sender's packets keep it live past the hold time of its first; a lost packet is no
    // matter.
    #expect(Self.media(&latch, 1, 110, at: 200) == .pass)
    #expect(Self.media(&latch, 2, 502, from: Self.stranger, at: 400) == .drop)
    #expect(latch.ssrc == 1)
  }

  @Test func aNewStreamFromTheSendersAddressIsFollowedFromItsSecondPacketInSequence() {
    var latch = SenderLatch()
    _ = Self.media(&latch, 1, 100, at: 0)
    _ = Self.media(&latch, 1, 101, at: 5)
    // Not within the hold time of the latest takeover.
    #expect(Self.media(&latch, 5, 7000, at: 10) == .drop)
    #expect(Self.media(&latch, 5, 7001, at: 15) == .drop)
    _ = Self.media(&latch, 1, 102, at: Self.hold - 5)
    #expect(Self.media(&latch, 5, 7002, at: Self.hold) == .newSender)
    #expect(latch.ssrc == 5)
    #expect(Self.media(&latch, 5, 7003, at: Self.hold + 5) == .pass)
  }

  @Test func aStreamInSequenceTakesOverFromALatchedStrayPacket() {
    var latch = SenderLatch()
    // A stray packet got there first; the sender's packets in sequence take over once the
    // hold time of that latch is over, and then the stray's SSRC is a stranger's.
    #expect(Self.media(&latch, 666, 1, from: Self.stranger, at: 0) == .newSender)
    #expect(Self.media(&latch, 1, 100, at: 5) == .drop)
    #expect(Self.media(&latch, 1, 101, at: 10) == .drop)
    #expect(Self.media(&latch, 1, 102, at: Self.hold) == .newSender)
    #expect(Self.media(&latch, 666, 2, from: Self.stranger, at: Self.hold + 5) == .drop)
    #expect(Self.media(&latch, 666, 3, from: Self.stranger, at: Self.hold + 10) == .drop)
    #expect(latch.ssrc == 1)
  }

  @Test(arguments: [false, true])
  func aFloodOfMadeUpSSRCsPassesAtMostOnePacketPerHoldTime(inSequence: Bool) {
    var latch = SenderLatch()
    var generator = SystemRandomNumberGenerator()
    var passed = 0
    // 2 s of 5000 packets a second: a new SSRC for each packet, or for each pair of packets in
    // sequence.
    var packet = 0
    while packet < 10_000 {
      let (ssrc, sequence): (UInt32, UInt16) = (generator.next(), generator.next())
      for next in 0..<(inSequence ? 2 : 1) {
        let verdict = Self.media(&latch, ssrc, sequence &+ UInt16(next), from: Self.stranger, at: packet / 5)
        if verdict == .newSender { passed += 1 }
        packet += 1
      }
    }
    #expect(passed <= 2000 / Self.hold + 1, "\(passed) new senders")
    // A sender that comes in the flood is followed.
    for next in 0..<10 { _ = Self.media(&latch, 1, 100 + UInt16(next), at: 2000 + Self.hold / 2 * next) }
    #expect(latch.ssrc == 1)
  }

  @Test func aSilentSenderGivesThePortUpAfterTheHoldTime() {
    var latch = SenderLatch()
    _ = Self.media(&latch, 1, 100, at: 0)
    #expect(Self.media(&latch, 2, 500, from: Self.stranger, at: Self.hold - 1) == .drop)
    #expect(Self.media(&latch, 2, 501, from: Self.stranger, at: Self.hold) == .newSender)
    // Now the first sender is the other one.
    #expect(Self.media(&latch, 1, 101, at: Self.hold + 10) == .drop)
    // The same sender coming back after a silence is not new.
    #expect(Self.media(&latch, 2, 502, from: Self.stranger, at: Self.hold * 5) == .pass)
  }

  @Test func rtcpIsTheSendersReportsFromItOrOnePortOfItsHost() {
    var latch = SenderLatch()
    // Before any media, RTCP is not taken: it would add a source to the session per SSRC.
    #expect(latch.control(reporterSSRC: 9, from: Self.stranger, at: Self.at(0)) == .drop)
    _ = Self.media(&latch, 1, 100, at: 0)
    #expect(latch.control(reporterSSRC: 1, from: Self.sender, at: Self.at(10)) == .take)
    #expect(latch.control(reporterSSRC: 9, from: Self.stranger, at: Self.at(10)) == .drop)
    #expect(latch.control(reporterSSRC: 1, from: ("127.0.0.2", 40001), at: Self.at(10)) == .drop)
    // A plain RTP tool's RTCP socket: the first port of the host with a report of the SSRC.
    let rtcp: SenderLatch.Address = ("127.0.0.1", 40001)
    #expect(latch.control(reporterSSRC: 1, from: rtcp, at: Self.at(20)) == .take)
    #expect(latch.control(reporterSSRC: 1, from: rtcp, at: Self.at(30)) == .take)
    #expect(latch.control(reporterSSRC: 1, from: Self.stranger, at: Self.at(30)) == .drop)
    // Reports of the sender's other SSRCs (its retransmissions'), or none, go unused.
    #expect(latch.control(reporterSSRC: nil, from: rtcp, at: Self.at(30)) == .ignore)
    #expect(latch.control(reporterSSRC: 77, from: Self.sender, at: Self.at(30)) == .ignore)
    // A silent sender's own reports are still taken (they say it is muted); no new RTCP port
    // is learned for it, and nobody else's reports are taken.
    #expect(latch.control(reporterSSRC: 1, from: Self.sender, at: Self.at(Self.hold + 1)) == .take)
    #expect(latch.control(reporterSSRC: 1, from: rtcp, at: Self.at(Self.hold + 1)) == .take)
    #expect(latch.control(reporterSSRC: 1, from: ("127.0.0.1", 40003), at: Self.at(Self.hold + 1)) == .drop)
    #expect(latch.control(reporterSSRC: 9, from: Self.stranger, at: Self.at(Self.hold + 1)) == .drop)
  }
}

import Foundation
import Testing

@testable import RevueSDK

/// ``SenderLatch``: which sender a receiver follows when more than one sends to its port.
@Suite(.sharedProcess) struct SenderLatchTests {
  static let sender: SenderLatch.Address = ("127.0.0.1", 40000)
  static let stranger: SenderLatch.Address = ("127.0.0.1", 40100)
  static let start = ContinuousClock.now

  /// `milliseconds` after the start.
  static func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

  @Test func theFirstSenderIsFollowedAndOthersAreDroppedWhileItIsLive() {
    var latch = SenderLatch()
    var verdict = SenderLatch.Verdict.drop
    verdict = latch.media(ssrc: 1, payloadType: 96, of: 96, from: Self.sender, at: Self.at(0))
    #expect(verdict == .newSender)
    verdict = latch.media(ssrc: 1, payloadType: 96, of: 96, from: Self.sender, at: Self.at(10))
    #expect(verdict == .pass)
    // A second sender, and a stranger with the sender's SSRC.
    verdict = latch.media(ssrc: 2, payloadType: 96, of: 96, from: Self.stranger, at: Self.at(20))
    #expect(verdict == .drop)
    verdict = latch.media(ssrc: 1, payloadType: 96, of: 96, from: Self.stranger, at: Self.at(30))
    #expect(verdict == .drop)
    // Retransmissions (their own SSRC) from the sender pass; from anyone else they do not.
    verdict = latch.media(ssrc: 7, payloadType: 97, of: 96, from: Self.sender, at: Self.at(40))
    #expect(verdict == .pass)
    verdict = latch.media(ssrc: 7, payloadType: 97, of: 96, from: Self.stranger, at: Self.at(40))
    #expect(verdict == .drop)
    // The sender's packets keep it live past the hold time of its first.
    verdict = latch.media(ssrc: 1, payloadType: 96, of: 96, from: Self.sender, at: Self.at(200))
    #expect(verdict == .pass)
    verdict = latch.media(ssrc: 2, payloadType: 96, of: 96, from: Self.stranger, at: Self.at(400))
    #expect(verdict == .drop)
    #expect(latch.ssrc == 1)
  }

  @Test func aNewSSRCFromTheSendersAddressIsFollowedAtOnce() {
    var latch = SenderLatch()
    var verdict = SenderLatch.Verdict.drop
    _ = latch.media(ssrc: 1, payloadType: 96, of: 96, from: Self.sender, at: Self.at(0))
    verdict = latch.media(ssrc: 5, payloadType: 96, of: 96, from: Self.sender, at: Self.at(10))
    #expect(verdict == .newSender)
    #expect(latch.ssrc == 5)
  }

  @Test func aSilentSenderGivesThePortUpAfterTheHoldTime() {
    var latch = SenderLatch()
    var verdict = SenderLatch.Verdict.drop
    _ = latch.media(ssrc: 1, payloadType: 96, of: 96, from: Self.sender, at: Self.at(0))
    let hold = Int(SenderLatch.hold / .milliseconds(1))
    verdict = latch.media(ssrc: 2, payloadType: 96, of: 96, from: Self.stranger, at: Self.at(hold - 1))
    #expect(verdict == .drop)
    verdict = latch.media(ssrc: 2, payloadType: 96, of: 96, from: Self.stranger, at: Self.at(hold))
    #expect(verdict == .newSender)
    // Now the first sender is the other one.
    verdict = latch.media(ssrc: 1, payloadType: 96, of: 96, from: Self.sender, at: Self.at(hold + 10))
    #expect(verdict == .drop)
    // The same sender coming back after a silence is not new.
    verdict = latch.media(ssrc: 2, payloadType: 96, of: 96, from: Self.stranger, at: Self.at(hold * 5))
    #expect(verdict == .pass)
  }

  @Test func rtcpComesFromTheSenderOrOnePortOfItsHostThatReportsItsSSRC() {
    var latch = SenderLatch()
    var taken = false
    // Before any media, RTCP from anyone is taken.
    taken = latch.control(senderSSRC: 9, from: Self.stranger, at: Self.at(0))
    #expect(taken)
    _ = latch.media(ssrc: 1, payloadType: 96, of: 96, from: Self.sender, at: Self.at(0))
    taken = latch.control(senderSSRC: 1, from: Self.sender, at: Self.at(10))
    #expect(taken)
    taken = latch.control(senderSSRC: 9, from: Self.stranger, at: Self.at(10))
    #expect(!taken)
    taken = latch.control(senderSSRC: 1, from: ("127.0.0.2", 40001), at: Self.at(10))
    #expect(!taken)
    // A plain RTP tool's RTCP socket: the first port of the host with a report of the SSRC.
    let rtcp: SenderLatch.Address = ("127.0.0.1", 40001)
    taken = latch.control(senderSSRC: 1, from: rtcp, at: Self.at(20))
    #expect(taken)
    taken = latch.control(senderSSRC: nil, from: rtcp, at: Self.at(30))
    #expect(taken)
    taken = latch.control(senderSSRC: 1, from: Self.stranger, at: Self.at(30))
    #expect(!taken)
  }
}

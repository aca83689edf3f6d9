import Foundation
import RevueLab
import RevueSDK
import RevueTestSupport
import Testing

@testable import RevueSDK

/// Issue 13's loss targets, each judged frame by frame against a reference receiver that got
/// every packet (``LinkTrial``): through 5% random loss both ways with 30 ± 10 ms, at least
/// 98% of the frames are shown intact and no freeze is longer than 200 ms; through 10%, 95%
/// and 500 ms. The tests run the short form, at 640×480; the whole matrix (720p too, and recovery
/// off, which fails these targets by far) is `revue-bench links`'s, its figures in
/// docs/loss-recovery.md. These run alone: two decoders and an encoder fill both cores.
@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(5))) struct LossRecoveryTests {
  init() { TestEnvironment.prepare() }

  /// The size of the trials.
  static let size = (width: 640, height: 480)

  /// Runs `trial` and checks its verdict against the targets; returns its result.
  @discardableResult
  static func check(
    _ trial: LinkTrial, intact: Double, longestFreeze: Duration, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> LinkTrial.Result {
    let port = FreePorts.rtp(pairs: 3)
    let result = try await trial.run(port: port)
    print("\(trial): \(result)")
    let verdict = result.verdict
    #expect(
      verdict.fractionIntact >= TestEnvironment.allowing(intact: intact), "\(trial): \(result)",
      sourceLocation: sourceLocation)
    #expect(
      verdict.longestFreeze <= TestEnvironment.allowing(longestFreeze), "\(trial): \(result)",
      sourceLocation: sourceLocation)
    #expect(result.forward.lost > 0 && result.backward.lost > 0, "the link lost packets both ways")
    return result
  }

  /// Issue 13's 5% target, and issue 26's first second under that loss: the first picture comes
  /// within 300 ms of the first packet at the receiver, and at least 98% of all the frames sent
  /// are shown intact, the start included (the verdict leaves the first two seconds out).
  @Test(.tier(.realtime), .wholeProcess, arguments: [VideoCodec.vp8, .h264])
  func fivePercentLossBothWays(_ codec: VideoCodec) async throws {
    let link = LinkConditions(loss: 0.05, delay: .milliseconds(30), jitter: .milliseconds(10))
    let trial = LinkTrial(
      codec: codec, width: Self.size.width, height: Self.size.height, link: link, recovery: .nack, frames: 300)
    let result = try await Self.check(trial, intact: 0.98, longestFreeze: .milliseconds(200))
    let startUp = try #require(result.startUp)
    let whole = try #require(result.whole)
    let firstPicture = try #require(startUp.firstPicture, "no picture: \(result)")
    #expect(firstPicture <= TestEnvironment.allowing(.milliseconds(300)), "\(trial): \(result)")
    #expect(whole.fractionIntact >= TestEnvironment.allowing(intact: 0.98), "\(trial): \(result)")
    // For the record (issue 26): random loss is no longer congestion, but the delay rule still
    // reads this link's jitter (30 ± 10 ms each way) as a queue now and then.
    print(
      "\(trial): target \(result.sent.targetBitrate.map { "\($0 / 1000) kb/s" } ?? "-")"
        + " (\(result.sent.targetBitrateReason.map { "\($0)" } ?? "-")) of \(trial.bitrate / 1000)")
  }

  /// Issue 13's 10% target, for VP8: H.264 through 10% is `revue-bench links`'s (met on
  /// 2026-12-07, docs/loss-recovery.md), as both codecs go through 5% here.
  @Test(.tier(.realtime), .wholeProcess, arguments: [VideoCodec.vp8])
  func tenPercentLossBothWays(_ codec: VideoCodec) async throws {
    let size = Self.size
    let link = LinkConditions(loss: 0.10, delay: .milliseconds(30), jitter: .milliseconds(10))
    try await Self.check(
      LinkTrial(
        codec: codec, width: size.width, height: size.height, link: link, recovery: .nack, frames: 240, seed: 2),
      intact: 0.95, longestFreeze: .milliseconds(500))
  }
}

extension LossRecoveryTests {
  /// ULPFEC beside NACK keeps every frame as NACK alone does; FEC alone rebuilds some lost
  /// packets (at 20% it protects few of them: docs/loss-recovery.md) and, above all, the
  /// receiver survives its losses (rtpulpfecdec aborted the process
  /// at the first lost packet when its caps did not name the stream).
  @Test(.tier(.realtime, smoke: true), .wholeProcess, arguments: [LossRecovery.fec, [.nack, .fec]])
  func fecAloneAndBesideNACK(_ recovery: LossRecovery) async throws {
    let link = LinkConditions(loss: 0.05, delay: .milliseconds(30), jitter: .milliseconds(10))
    let trial = LinkTrial(codec: .vp8, width: 640, height: 480, link: link, recovery: recovery, frames: 240, seed: 3)
    let result = try await trial.run(port: FreePorts.rtp(pairs: 3))
    print("\(trial): \(result)")
    if recovery.contains(.nack) {
      // Retransmissions come before the jitter buffer gives up, when FEC would step in.
      #expect(result.verdict.fractionIntact >= TestEnvironment.allowing(intact: 0.98), "\(result)")
      #expect(result.verdict.longestFreeze <= TestEnvironment.allowing(.milliseconds(200)), "\(result)")
    } else {
      #expect(result.received.packetsRecovered > 0, "FEC rebuilt no packet: \(result)")
      #expect(result.verdict.framesShown > 0, "\(result)")
    }
  }
}

/// What the README and docs/loss-recovery.md say of the receiver's NACKs is what `RTPReceiver`
/// sends: how many copies of a first request and of a retry, and when a retry goes.
@Suite(.sharedProcess, .timeLimit(.minutes(1))) struct LossRecoveryDocumentationTests {
  static func read(_ path: String) throws -> String {
    try String(contentsOf: TestEnvironment.repositoryRoot.appendingPathComponent(path), encoding: .utf8)
  }

  @Test(.tier(.unit)) func theDocsSayHowManyCopiesOfANACKGo() throws {
    let words = [1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"]
    let first = try #require(words[RTPReceiver.firstNACKCopies])
    let retry = try #require(words[RTPReceiver.retryNACKCopies])
    let retryDelay = RTPReceiver.nackRetryMilliseconds
    for (path, sentences) in [
      ("README.md", ["\(first) copies of the first request", "\(retry) copies of each retry \(retryDelay) ms later"]),
      (
        "docs/loss-recovery.md",
        [
          "goes **\(first) times** (`RTPReceiver.firstNACKCopies`)",
          "sent again (\(retry) copies) **\(retryDelay) ms**",
        ]
      ),
    ] {
      let text = try Self.read(path).replacingOccurrences(of: "\n", with: " ")
      for sentence in sentences where !text.contains(sentence) { Issue.record("\(path) does not say '\(sentence)'") }
    }
  }
}

import Foundation
import RevueLab
import RevueSDK
import RevueTestSupport
import Testing

/// Issue 14's hostile input: a receiver fed each ``HostileCase`` (500 datagrams a second to its
/// RTP and RTCP ports, seeded) beside a valid VP8 stream keeps running and shows the stream's
/// frames intact, judged frame by frame against a reference receiver that got only the valid
/// stream (``LinkTrial``). The stream's own sender is on the far side of a perfect link.
@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(5))) struct HostileInputTests {
  init() { TestEnvironment.prepare() }

  @Test(.wholeProcess, arguments: HostileCase.allCases)
  func theStreamIsShownIntactThrough(_ hostile: HostileCase) async throws {
    let trial = LinkTrial(
      codec: .vp8, width: 640, height: 480, link: .perfect, recovery: .nack, frames: 180, seed: 14, hostile: hostile)
    let result = try await trial.run(port: FreePorts.rtp(pairs: 3))
    print("\(trial): \(result)")
    let sent = try #require(result.hostileSent)
    #expect(sent.rtp + sent.rtcp > 500, "the hostile traffic ran for over a second")
    #expect(result.verdict.fractionIntact >= 0.98, "\(trial): \(result)")
    #expect(result.verdict.longestFreeze <= .milliseconds(200), "\(trial): \(result)")
  }
}

import Foundation
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@testable import RevueSDK

/// Issue 26: a WHIP publication follows the path as an RTP publication does, from the receiver
/// reports of a peer no one here wrote. aiortc's endpoint runs in a network namespace of the
/// test's own, behind a veth pair whose way in is capped at 250 kb/s by `tc tbf` (100 ms of
/// buffer); the publication's layer is 1.5 Mb/s (VP8, 640×480, the moving scene of
/// ``CongestionControlTests``) and it starts at 300 kb/s, as libwebrtc does. Its target goes
/// under the cap within 5 s of the first frame aiortc decodes, and what it sends stays there (the
/// receiver's REMB and reports), aiortc decoding at least 25 frames a second over the last 6 of 14 s.
///
/// Not met yet (issue 26 asks ≥ 25 fps from 5 s on): the first seconds' loss (the start above
/// the cap) stalls aiortc for 4–7 s, whose jitter buffer waits for a lost packet until 128 have
/// come, and asks for a packet again only when another goes missing; the 10 s after
/// convergence averaged 19–24 fps in the runs of 2026-12-07, the steady state 29–31.
@Suite(.tier(.interop), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct WHIPCongestionControlTests {
  init() { TestEnvironment.prepare() }

  /// The cap.
  static let cap = 250_000

  @Test(.wholeProcess) func aWHIPStreamThroughA250kbpsCapConvergesAndKeepsItsFrameRate() async throws {
    let namespace = try await NetworkNamespace.make()
    do {
      try await Self.publishThroughTheCap(namespace)
    } catch {
      await namespace.remove()
      throw error
    }
    await namespace.remove()
  }

  private static func publishThroughTheCap(_ namespace: NetworkNamespace) async throws {
    try await namespace.cap(kilobitsPerSecond: cap / 1000, bufferMilliseconds: 100)
    let (endpoint, url) = try await WHIPEndpoint.start(["--fps"], in: namespace)
    let (track, capturer, scene) = try await MovingScene.track(width: 640, height: 480)
    defer { scene.stop() }
    let publication: WHIPPublication
    do {
      publication = try await WHIPPublication(
        publishing: track, to: url, encoding: VideoEncoding(maxBitrate: 1_500_000, maxFps: 30), simulcast: false)
    } catch {
      Issue.record("the endpoint said:\n\(await endpoint.stop().error.suffix(3000))")
      throw error
    }
    #expect(publication.statistics.adaptiveBitrate)

    // Each second of aiortc's decoding (an `fps N second S` line): the frames, and the
    // publication's target then.
    var curve: [(second: Int, fps: Int, target: Int?, reason: BitrateChangeReason?, bytes: Int)] = []
    var converged: Int?
    var second = 0
    while second < 40 {
      second += 1
      let output = try await endpoint.waitForOutput(containing: "second \(second)\n", within: 3)
      let line = output.split(separator: "\n").last { $0.hasSuffix(" second \(second)") }
      let fps = line.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
      let statistics = publication.statistics
      curve.append((second, fps, statistics.targetBitrate, statistics.targetBitrateReason, statistics.bytesSent))
      if converged == nil, let target = statistics.targetBitrate, target < cap { converged = second }
      if let converged, second >= converged + 14 { break }
      if converged == nil, second >= 5 { break }
    }
    print("WHIP congestion control, VP8 640x480, 1.5 Mb/s to aiortc through tc tbf 250 kb/s (100 ms):")
    var previousBytes = 0
    for sample in curve {
      print(
        String(
          format: "%4d s  target %5d kb/s  sent %5d kb/s  %2d fps  %@", sample.second, (sample.target ?? 0) / 1000,
          (sample.bytes - previousBytes) * 8 / 1000, sample.fps, sample.reason.map { "\($0)" } ?? "-"))
      previousBytes = sample.bytes
    }
    let convergedSecond = try #require(converged, "the target under the 250 kb/s cap within 5 s: \(curve)")
    func fps(_ seconds: ArraySlice<Int>) -> Double { Double(seconds.reduce(0, +)) / Double(max(1, seconds.count)) }
    // From the second after the one it converged in: 10 s, and the last 6 of 14.
    let after = curve.filter { $0.second > convergedSecond + 1 }.map(\.fps)
    let (first, last) = (fps(after.prefix(10)), fps(after.suffix(6)))
    print(
      "converged in second \(convergedSecond); \(String(format: "%.1f", first)) fps over the 10 s after,"
        + " \(String(format: "%.1f", last)) over the last 6 of \(after.count)")
    #expect(after.count == 13)
    #expect(last >= 25 / TestEnvironment.timingAllowance, "\(curve)")
    // What was sent over those 6 s fits the path (the target probes above it now and then, and
    // the receiver's REMB and reports bring it back).
    let lastSeconds = curve.suffix(7).map(\.bytes)
    let sent = (lastSeconds.last! - lastSeconds.first!) * 8 / 6
    print("sent \(sent / 1000) kb/s over the last 6 s")
    #expect(sent <= cap, "held under the cap: \(curve)")
    #expect(publication.state == .running)

    await publication.stop()
    try await capturer.stopCapture()
    await endpoint.stop()
  }
}

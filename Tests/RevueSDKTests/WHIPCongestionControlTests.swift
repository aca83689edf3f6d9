import Foundation
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@testable import RevueSDK

/// Issue 26: a WHIP publication follows the path as an RTP publication does, from the receiver
/// reports of a peer no one here wrote, and its receiver keeps 25 fps. aiortc's endpoint runs in
/// a network namespace of the test's own, behind a veth pair whose way in is capped at 250 kb/s
/// by `tc tbf` (100 ms of buffer); the publication's layer is 1.5 Mb/s (VP8, 640×480, the moving
/// scene of ``CongestionControlTests``). Its target is under the cap within 5 s of the first
/// frame aiortc decodes; aiortc decodes at least 25 frames in every second from the fifth on,
/// 14 of them (not an average, which hides a freeze); what is sent over them fits the cap. The
/// curve is printed each second: the target and why, what was sent, the frames decoded, the
/// keyframes, the NACKed packets that reached the RTX sender, its retransmissions, the requests
/// refused over the budget, and the packets the pacer held.
///
/// What it took (2026-12-07): before, the first seconds' loss froze aiortc for 4–7 s (the first
/// 10 s after convergence averaged 19–24 fps): its jitter buffer waits for a lost packet until
/// 128 have come (4 s at these rates) and asks again only when another goes missing, so one
/// unanswered request costs the whole wait. Counted: the frames encoded while the connection came
/// up left at once when it was up (300–650 kb/s in the first second), the start (300 kb/s) was
/// above the cap, and the retransmission budget refused 65–390 requests a second, aiortc's
/// repeated lists of what is missing. Now the video is paced (``Pacer``, 2.5 × the target), sends
/// nothing before the connection and then starts from a keyframe, starts at 200 kb/s and grows
/// gently, answers aiortc's repeated requests (``RetransmissionBudget/Policy/webRTC``), and VP8
/// drops a frame rather than overshoot its buffer (``VideoEncoder/dropsFramesOverBudget``).
///
/// Measured on a 2-core machine shared with three other builds (load 0.6–2.8): 17 of 18 runs
/// passed, 26–32 fps in every judged second, 193–208 kb/s sent; the other had one second at
/// 22 fps, a packet lost (and retransmitted, no freeze) as gentle growth passed the cap at
/// 269 kb/s before REMB brought it back. Without VP8's frame dropping,
/// 11 of 16 passed at load 3–5.5 and 6 of 9 at load 0.6–2.8: in each failure a loss burst froze
/// aiortc 3–4 s, once a retransmission was refused or lost again, after the stream went on
/// sending 240–360 kb/s for a second once the receiver's estimate (REMB) had cut the target to
/// 130–205 kb/s (the encoder spending its buffer; the pacer, at 2.5 × the new target, passing it
/// on above the cap); and once a second at 21 fps with nothing lost. Pacing at 1.5 × the target:
/// 2 of 5 passed (a cut target made the pacer the bottleneck: 19 fps, then 34, nothing lost).
@Suite(.tier(.interop), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct WHIPCongestionControlTests {
  init() { TestEnvironment.prepare() }

  /// The cap.
  static let cap = 250_000
  /// The seconds judged, counted from aiortc's first decoded frame: from the fifth on, 14 of them.
  static let seconds = 5...18

  /// One second of aiortc's decoding and the publication's state at its end.
  struct Sample {
    var second: Int
    var fps: Int
    var target: Int?
    var reason: BitrateChangeReason?
    var bytes: Int
    var keyframes: Int
    var path: (pacerRate: Int?, packetsHeld: Int, requested: Int, retransmitted: Int, refused: Int)

    /// The second as a line of the printed curve, its counts since `previous`.
    func line(after previous: Sample) -> String {
      String(
        format:
          "%4d s  target %5d kb/s  sent %5d kb/s  %2d fps  %d key  NACKed %3d  RTX %3d  refused %3d  paced %4d  %@",
        second, (target ?? 0) / 1000, (bytes - previous.bytes) * 8 / 1000, fps, keyframes - previous.keyframes,
        path.requested - previous.path.requested, path.retransmitted - previous.path.retransmitted,
        path.refused - previous.path.refused, path.packetsHeld - previous.path.packetsHeld,
        reason.map { "\($0)" } ?? "-")
    }
  }

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

    // Each second of aiortc's decoding from its first frame (an `fps N second S` line), and
    // the publication's state then.
    var curve: [Sample] = []
    var last = Sample(second: 0, fps: 0, target: nil, reason: nil, bytes: 0, keyframes: 0, path: publication.sendPath)
    for second in 1...Self.seconds.upperBound {
      let output = try await endpoint.waitForOutput(containing: "second \(second)\n", within: 3)
      let line = output.split(separator: "\n").last { $0.hasSuffix(" second \(second)") }
      let statistics = publication.statistics
      let sample = Sample(
        second: second, fps: line.flatMap { Int($0.split(separator: " ")[1]) } ?? 0,
        target: statistics.targetBitrate, reason: statistics.targetBitrateReason, bytes: statistics.bytesSent,
        keyframes: statistics.keyframes, path: publication.sendPath)
      curve.append(sample)
      print(sample.line(after: last))
      last = sample
    }
    let judged = curve.filter { Self.seconds.contains($0.second) }
    let before = curve.last { $0.second < Self.seconds.lowerBound }
    let sent = (judged.last!.bytes - (before?.bytes ?? 0)) * 8 / judged.count
    let converged = curve.first { ($0.target ?? .max) < cap }?.second
    print(
      "under the cap in second \(converged.map { "\($0)" } ?? "never"); from second \(Self.seconds.lowerBound) to"
        + " \(Self.seconds.upperBound): \(judged.map(\.fps).min()!)-\(judged.map(\.fps).max()!) fps, sent \(sent / 1000) kb/s"
    )
    #expect(converged.map { $0 <= 5 } == true, "the target under the 250 kb/s cap within 5 s")
    let floor = 25 / TestEnvironment.timingAllowance
    #expect(judged.allSatisfy { Double($0.fps) >= floor }, "every second at least \(floor) fps: \(judged.map(\.fps))")
    #expect(sent <= cap, "what was sent from second \(Self.seconds.lowerBound) on fits the cap")
    #expect(publication.state == .running)

    await publication.stop()
    try await capturer.stopCapture()
    await endpoint.stop()
  }
}

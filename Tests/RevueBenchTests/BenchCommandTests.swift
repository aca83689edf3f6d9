import Foundation
import RevueCommandLine
import RevueLab
import RevueProcess
import RevueSDK
import RevueTestSupport
import Testing

@testable import revue_bench

/// `revue-bench`'s command line: its scenarios and options, the links' matrix, and its hidden
/// child mode.
@Suite(.sharedProcess, .timeLimit(.minutes(1))) struct BenchParsingTests {
  /// `revue-bench` with `scenarios` and the defaults but `change`.
  static func bench(_ scenarios: [BenchCommand.Scenario] = [], _ change: (inout BenchCommand) -> Void = { _ in })
    -> BenchInvocation
  {
    var command = BenchCommand(scenarios: scenarios, runs: 3)
    change(&command)
    return .bench(command)
  }

  @Test(.tier(.unit)) func benchOptions() throws {
    #expect(try BenchInvocation.parse([]) == Self.bench())
    #expect(
      try BenchInvocation.parse(["--markdown", "docs/benchmarks.md"])
        == Self.bench { $0.markdownPath = "docs/benchmarks.md" })
    #expect(
      try BenchInvocation.parse(["latency-vp8-720p", "scale-vp8-480p", "send-h264-720p-mjpeg"])
        == Self.bench([.latencyVP8, .scaleVP8, .sendH264MJPEG]))
    #expect(
      try BenchInvocation.parse(["capture-bgra", "--frames", "10", "--runs", "1", "--json", "out.json"])
        == Self.bench([.captureBGRA]) { ($0.frames, $0.runs, $0.jsonPath) = (10, 1, "out.json") })
    #expect(try BenchInvocation.parse(["soak", "--minutes", "2"]) == Self.bench([.soak]) { $0.minutes = 2 })
    #expect(!BenchCommand.Scenario.standard.contains(.soak), "a bench without names does not take 10 more minutes")
    #expect(try BenchInvocation.parse(["sessions"]) == Self.bench([.sessions]))
    #expect(!BenchCommand.Scenario.standard.contains(.sessions), "nor 10 more for the sessions")
    for help in [["help"], ["--help"], ["capture-nv12", "-h"]] { #expect(try BenchInvocation.parse(help) == .help) }
    #expect(BenchInvocation.usage.hasPrefix("usage: revue-bench "))
    #expect(throws: UsageError(description: "--minutes takes a whole number above 0, not '0'")) {
      try BenchInvocation.parse(["--minutes", "0"])
    }
    #expect(throws: UsageError.self) { try BenchInvocation.parse(["--frames", "0"]) }
    #expect(throws: UsageError(description: "--frames needs a value")) { try BenchInvocation.parse(["--frames"]) }
    #expect(throws: UsageError(description: "unknown option '--fast'")) { try BenchInvocation.parse(["--fast"]) }
    #expect(throws: UsageError.self) { try BenchInvocation.parse(["warp"]) }
    #expect(throws: UsageError.self) { try BenchInvocation.parse(["camera-mjpeg"]) }
    #expect(throws: UsageError.self) { try BenchInvocation.parse(["bench"]) }
  }

  @Test(.tier(.unit)) func benchLinksIsNamedAloneAndListsIssue13sMatrix() throws {
    #expect(
      try BenchInvocation.parse(["links", "--markdown", "docs/loss-recovery.md"])
        == Self.bench([.links]) { $0.markdownPath = "docs/loss-recovery.md" })
    #expect(try BenchInvocation.parse(["links", "--frames", "120"]) == Self.bench([.links]) { $0.frames = 120 })
    #expect(!BenchCommand.Scenario.standard.contains(.links), "a bench without names does not run the links")
    #expect(throws: UsageError(description: "links runs alone (its report is not an A/B table)")) {
      try BenchInvocation.parse(["links", "capture-nv12"])
    }
    #expect(throws: UsageError.self) { try BenchInvocation.parse(["soak", "links"]) }
    #expect(throws: UsageError.self) { try BenchInvocation.parse(["link"]) }
    #expect(BenchInvocation.usage.contains("links (run only when named"))

    // Loss {0, 5%, 10%} × codec × size × recovery {nack, off}, and FEC at 640×480 through loss;
    // then the outage.
    let links = BenchCommand.Links()
    let trials = links.lossTrials
    #expect(trials.count == 3 * 2 * 2 * 2 + 2 * 2 * 2)
    #expect(Set(trials.map(\.link.loss)) == [0, 0.05, 0.10])
    #expect(trials.allSatisfy { $0.frames == 300 && $0.outage == nil && $0.link.delay == .milliseconds(30) })
    #expect(trials.allSatisfy { $0.link.jitter == .milliseconds(10) })
    for codec in [VideoCodec.vp8, .h264] {
      for (width, height) in [(640, 480), (1280, 720)] {
        for recovery in [LossRecovery.nack, []] {
          #expect(
            trials.filter { $0.codec == codec && $0.width == width && $0.height == height && $0.recovery == recovery }
              .count == 3, "\(codec) \(width)x\(height) \(recovery)")
        }
      }
    }
    #expect(trials.filter { $0.recovery.contains(.fec) }.allSatisfy { $0.width == 640 && $0.link.loss > 0 })
    #expect(BenchCommand.Links.target(trials.first { $0.link.loss == 0.05 }!)! == (0.98, .milliseconds(200)))
    #expect(BenchCommand.Links.target(trials.first { $0.link.loss == 0.10 }!)! == (0.95, .milliseconds(500)))
    #expect(BenchCommand.Links.target(trials.first { $0.recovery.isEmpty }!) == nil)
    #expect(BenchCommand.Links.target(trials.first { $0.link.loss == 0 }!) == nil, "the issue sets none there")
    // A trial goes to its child process and back unchanged.
    for trial in trials + links.outageTrials {
      #expect(try BenchCommand.Links.trial(BenchCommand.Links.parameters(trial)) == trial)
    }
    let outages = links.outageTrials
    #expect(outages.count == 4)
    #expect(outages.allSatisfy { $0.outage == .seconds(5) && $0.width == 640 && $0.link.loss == 0 })
    #expect(Set(outages.map { LinkTrial.name(of: $0.recovery) }) == ["nack", "off"])
    // The outage ends 8 s in; the trial runs 5 s past it.
    #expect(outages.allSatisfy { $0.frames >= LinkTrial.outageFrame + 150 + 150 })
  }

  @Test(.tier(.unit)) func benchLinksRunsEachHostileCaseAloneThenAllAtOnce() throws {
    #expect(BenchInvocation.usage.contains("each of the 12 cases alone and all at once"))
    #expect(HostileCase.allCases.count == 12, "the usage counts the cases")
    // The old per-case test's trial for each case, then HostileInputTests's.
    let links = BenchCommand.Links()
    let trials = links.hostileTrials
    #expect(trials.map(\.hostile) == HostileCase.allCases.map { [$0] } + [HostileCase.allCases])
    let link = LinkConditions(loss: 0.02, delay: .milliseconds(30), jitter: .milliseconds(10))
    for trial in trials {
      #expect(
        trial
          == LinkTrial(
            codec: .vp8, width: 640, height: 480, link: link, recovery: .nack, frames: 180, seed: 14,
            hostile: trial.hostile))
      #expect(BenchCommand.Links.target(trial)! == (0.98, .milliseconds(200)))
    }
    var fewer = links
    fewer.frames = 120
    #expect(fewer.hostileTrials == trials, "--frames leaves the hostile trials as the test ran them")
    // The cases go to the child process and back, alone and all at once.
    for trial in [trials[0], trials.last!] {
      #expect(try BenchCommand.Links.trial(BenchCommand.Links.parameters(trial)) == trial)
    }
    #expect(BenchCommand.Links.parameters(trials[0])["hostile"] == "randomBytes")
    #expect(
      BenchCommand.Links.parameters(trials.last!)["hostile"]
        == HostileCase.allCases.map(\.rawValue).joined(separator: ","))
    #expect(BenchCommand.Links.parameters(links.outageTrials[0])["hostile"] == nil)
    var parameters = BenchCommand.Links.parameters(trials[0])
    for bad in ["ssrcFlood,packetStorm", "", "ssrcFlood,", "SSRCFLOOD"] {
      parameters["hostile"] = bad
      #expect(throws: RevueError.self, "hostile=\(bad)") { try BenchCommand.Links.trial(parameters) }
    }
  }

  @Test(.tier(.unit)) func benchLinksJudgesAHostileTrialByTheTestsTarget() throws {
    // A report from before the hostile counts were measured still reads.
    let old = """
      {"framesSent": 105, "framesShown": 105, "framesIntact": 104, "longestFreezeMs": 120, "freezesOver200Ms": 0,
       "forward": {"packetsIn": 400, "bytesIn": 300000, "lost": 8}, "backward": {"packetsIn": 40, "bytesIn": 4000,
       "lost": 1}, "nacksSent": 8, "retransmissionsUsed": 30, "packetsRebuiltByFEC": 0, "packetsGivenUp": 0,
       "keyframesAsked": 0, "keyframesMade": 0, "summary": "old"}
      """
    let measured = try JSONDecoder().decode(BenchCommand.Links.Measured.self, from: Data(old.utf8))
    #expect(measured.hostileSent == nil && measured.invalidPackets == nil && measured.packetsFromOtherSenders == nil)
    var result = measured
    result.hostileSent = .init(rtp: 1500, rtcp: 500)
    (result.invalidPackets, result.packetsFromOtherSenders) = (700, 900)
    let again = try JSONDecoder().decode(BenchCommand.Links.Measured.self, from: JSONEncoder().encode(result))
    #expect(again == result)

    let trial = BenchCommand.Links().hostileTrials[11]
    #expect(trial.hostile == [.ssrcFlood])
    let met = BenchCommand.Links.Outcome(trial: trial, result: result, seconds: 7)
    #expect(BenchCommand.Links.verdict(met) == "≥ 98%, ≤ 200 ms: met")
    let line = BenchCommand.Links.line(met)
    #expect(
      line.contains("hostile ssrcFlood: 1500 RTP + 500 RTCP sent, 700 not RTP, 900 from other senders"), "\(line)")
    result.longestFreezeMs = 201
    let frozen = BenchCommand.Links.Outcome(trial: trial, result: result, seconds: 7)
    #expect(BenchCommand.Links.verdict(frozen) == "≥ 98%, ≤ 200 ms: MISSED")
    let failed = BenchCommand.Links.Outcome(trial: trial, failure: "the trial's process failed: boom", seconds: 1)
    #expect(BenchCommand.Links.verdict(failed) == "≥ 98%, ≤ 200 ms: MISSED")
    #expect(BenchCommand.Links.line(failed).contains("hostile ssrcFlood: FAILED"))

    let markdown = BenchCommand.Links().markdown(
      loss: [], outage: [], hostile: [met, frozen, failed], load: .init(), seconds: 1, command: "bench")
    #expect(markdown.contains("## Hostile input"))
    #expect(
      markdown.contains(
        "| `ssrcFlood` | 99.0% (104 of 105) | 120 ms | 1500 + 500 | 700 | 900 | ≥ 98%, ≤ 200 ms: met |"))
    #expect(markdown.contains("| `ssrcFlood` | **failed** (see *Targets missed*) | — | — | — | — | MISSED |"))
    let missed = try #require(markdown.components(separatedBy: "## Targets missed").last)
    #expect(missed.contains("hostile ssrcFlood: old (≥ 98%, ≤ 200 ms: MISSED)"), "\(missed)")
    #expect(missed.contains("hostile ssrcFlood: the trial's process failed: boom"), "\(missed)")
  }

  @Test(.tier(.unit)) func gstLaunchConversionsAreTheVideoconvertsWhoseCapsChange() {
    let output = """
      /GstPipeline:pipeline0/GstVideoConvert:videoconvert0.GstPad:src: caps = video/x-raw, format=(string)I420, width=(int)1280
      /GstPipeline:pipeline0/GstVideoConvert:videoconvert0.GstPad:sink: caps = video/x-raw, format=(string)I420, width=(int)1280
      /GstPipeline:pipeline0/GstVideoConvert:videoconvert1.GstPad:src: caps = video/x-raw, format=(string)I420, width=(int)1280
      /GstPipeline:pipeline0/GstVideoConvert:videoconvert1.GstPad:sink: caps = video/x-raw, format=(string)NV12, width=(int)1280
      /GstPipeline:pipeline0/GstCapsFilter:capsfilter0.GstPad:src: caps = video/x-raw, format=(string)I420, width=(int)1280
      /GstPipeline:pipeline0/GstVP8Enc:vp8enc0.GstPad:sink: caps = video/x-raw, format=(string)NV12, width=(int)1280
      """
    #expect(BenchCommand.convertingElements(inVerboseOutput: output) == 1)
    // Renegotiated to passthrough: the last caps of each pad count.
    let renegotiated =
      output
      + "\n/GstPipeline:pipeline0/GstVideoConvert:videoconvert1.GstPad:sink: caps = video/x-raw, format=(string)I420, width=(int)1280"
    #expect(BenchCommand.convertingElements(inVerboseOutput: renegotiated) == 0)
    #expect(BenchCommand.convertingElements(inVerboseOutput: "") == 0)
  }

  @Test(.tier(.pipeline)) func benchChildIsHiddenAndTakesItsArguments() throws {
    #expect(
      try BenchInvocation.parse(["--child", "send", "codec=vp8", "port=20000"])
        == .child(BenchChild(arguments: ["send", "codec=vp8", "port=20000"])))
    #expect(!BenchInvocation.usage.contains("--child"))
    let child = BenchChild(arguments: ["send", "codec=vp8", "port=20000", "source=mjpeg"])
    #expect(child.kind == "send")
    #expect(child.parameters == ["codec": "vp8", "port": "20000", "source": "mjpeg"])
    for source in [BenchStream.Source.camera, .mjpegCamera, .pushedNV12, .pushedBGRA] {
      let stream = BenchStream(codec: .h264, width: 1280, height: 720, source: source)
      #expect(try BenchStream(parameters: stream.parameters) == stream)
    }
    #expect(throws: RevueError.self) { try BenchStream(parameters: child.parameters) }
    #expect(throws: RevueError.self) {
      try BenchStream(parameters: ["codec": "vp8", "width": "640", "height": "480", "source": "tape"])
    }
  }
}

/// Runs the built `revue-bench` executable, as a user would.
@Suite(.sharedProcess, .timeLimit(.minutes(1))) struct RevueBenchExecutableTests {
  /// The `revue-bench` binary that `swift build` put beside the test binary.
  static var executable: URL { ChildProcess.executable(named: "revue-bench") }

  @Test(.tier(.pipeline)) func benchSmokeRun() async throws {
    let report = FileManager.default.temporaryDirectory.appendingPathComponent(
      "bench-\(UInt32.random(in: 0..<UInt32.max)).md")
    defer { try? FileManager.default.removeItem(at: report) }
    let result = try await ChildProcess.run(
      Self.executable, ["capture-nv12", "--frames", "20", "--runs", "1", "--markdown", report.path], within: 45)
    #expect(result.status == 0, "\(result.error)")
    let copied = result.output.split(separator: "\n").first { $0.contains("bytes copied per frame") }
    #expect(copied?.contains("[0: met]") == true, "\(result.output)")
    let table = try String(contentsOf: report, encoding: .utf8)
    #expect(table.contains("| scenario | measure | Revue | gst-launch | ratio | unit | target |"))
    #expect(table.contains("| bytes copied per frame | 0 | — | — |"))
    #expect(table.contains("Machine: "))
    #expect(table.contains("Made by `swift run -c release revue-bench capture-nv12 --runs 1 --frames 20 --markdown "))
  }

  @Test(.tier(.pipeline)) func helpAndUsageErrors() async throws {
    let help = try await ChildProcess.run(Self.executable, ["--help"], within: 10)
    #expect(help.status == 0 && help.output.hasPrefix("usage: revue-bench "), "\(help.error)")
    let wrong = try await ChildProcess.run(Self.executable, ["warp"], within: 10)
    #expect(wrong.status == 2 && wrong.error.hasPrefix("revue-bench: unknown scenario 'warp' (known: capture-nv12,"))
    #expect(wrong.error.contains("\nusage: revue-bench "))
  }
}

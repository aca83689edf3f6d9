import Foundation
import RevueCommandLine
import RevueProcess
import RevueSDK
import RevueTestSupport
import Testing

@testable import revue

@Suite(.sharedProcess, .timeLimit(.minutes(1))) struct CommandParsingTests {
  @Test(.tier(.unit)) func noArgumentsRunsTheMainJob() throws {
    #expect(try Command.parse([]) == .check(json: false))
  }

  @Test(.tier(.pipeline)) func checkWithJSON() throws {
    #expect(try Command.parse(["check"]) == .check(json: false))
    #expect(try Command.parse(["check", "--json"]) == .check(json: true))
  }

  @Test(.tier(.unit)) func helpEverywhere() throws {
    #expect(try Command.parse(["help"]) == .help)
    #expect(try Command.parse(["--help"]) == .help)
    #expect(try Command.parse(["check", "--help"]) == .help)
  }

  @Test(.tier(.unit)) func unknownCommandOrOptionIsAUsageError() {
    #expect(throws: UsageError(description: "unknown command 'fly'")) { try Command.parse(["fly"]) }
    // The bench is a program of its own, revue-bench: the node neither runs nor mentions it.
    #expect(throws: UsageError(description: "unknown command 'bench'")) { try Command.parse(["bench"]) }
    #expect(throws: UsageError(description: "unknown command 'bench'")) {
      try Command.parse(["bench", "--child", "send", "codec=vp8"])
    }
    #expect(!Command.usage.contains("bench") && !Command.usage.contains("--child"))
    #expect(throws: UsageError(description: "check: unknown option '--fast'")) {
      try Command.parse(["check", "--fast"])
    }
  }

  @Test(.tier(.pipeline)) func exitCodes() async {
    #expect(await Command.run(["fly"]) == .usage)
    #expect(await Command.run(["help"]) == .success)
  }
}

/// Runs the built `revue` executable, as a user would.
@Suite(.sharedProcess, .timeLimit(.minutes(1))) struct RevueExecutableTests {
  /// The `revue` binary that `swift build` put beside the test binary.
  static var executable: URL { ChildProcess.executable(named: "revue") }

  /// Runs `revue` with `arguments` to its end; a run that takes more than `seconds` is ended and
  /// fails, quoting its standard error.
  static func run(
    _ arguments: [String], environment: [String: String?] = [:], within seconds: Double = 45,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> ChildProcess.Exit {
    try await ChildProcess.run(
      executable, arguments, environment: environment, within: seconds, sourceLocation: sourceLocation)
  }

  @Test(.tier(.pipeline)) func checkReportsVersionElementsAndATestPipeline() async throws {
    let result = try await Self.run(["check"])
    #expect(result.status == 0, "\(result.error)")
    #expect(result.output.hasPrefix("GStreamer 1."))
    #expect(result.output.contains("vp8enc"))
    #expect(result.output.contains("test pipeline: 30 frames"))
  }

  @Test(.tier(.pipeline)) func checkAsJSON() async throws {
    let result = try await Self.run(["check", "--json"])
    #expect(result.status == 0, "\(result.error)")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
    #expect((object["gstreamer"] as? String)?.hasPrefix("1.") == true)
    let elements = try #require(object["elements"] as? [[String: Any]])
    #expect(elements.contains { $0["factory"] as? String == "rtpbin" && $0["present"] as? Bool == true })
    #expect((object["selfTest"] as? [String: Any])?["framesReceived"] as? Int == 30)
    // No camera on these machines: the virtual one, said so.
    let camera = try #require(object["camera"] as? [String: Any])
    #expect(camera["frames"] as? Int == 30)
    #expect(camera["width"] as? Int == 1280 && camera["height"] as? Int == 720)
    if camera["virtual"] as? Bool == true { #expect(result.error.contains("using the virtual camera")) }
  }

  @Test(.tier(.pipeline)) func usageErrorExitsWithTwoAndOneLine() async throws {
    let result = try await Self.run(["fly"])
    #expect(result.status == 2)
    #expect(result.error.hasPrefix("revue: unknown command 'fly'\n"))
    let bench = try await Self.run(["bench", "capture-nv12"])
    #expect(bench.status == 2 && bench.error.hasPrefix("revue: unknown command 'bench'\nusage: revue <command>"))
    let help = try await Self.run(["help"])
    #expect(help.status == 0 && help.output.hasPrefix("usage: revue <command>") && !help.output.contains("bench"))
  }

  @Test(.tier(.pipeline)) func devicesListsEveryVirtualProfileWithItsFormats() async throws {
    let result = try await Self.run(["devices"], environment: ["REVUE_VIRTUAL_CAMERAS": "all"])
    #expect(result.status == 0, "\(result.error)")
    for name in [
      "USB 720p Webcam", "USB 1080p Webcam", "Integrated Camera", "Integrated IR Camera", "CSI Camera Module",
    ] {
      #expect(result.output.contains(name), "\(name) missing")
    }
    #expect(result.output.contains("MJPEG 1920x1080 @ 30,24,20,15,10,7.5,5 fps"))
    #expect(result.output.contains("NV12 3840x2160 @ 1-15 fps"))
    #expect(result.output.contains("H264 1280x720"))
    let json = try await Self.run(["devices", "--json"], environment: ["REVUE_VIRTUAL_CAMERAS": "csi-camera-module"])
    let devices = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]])
    let camera = try #require(devices.first { $0["id"] as? String == "virtual:csi-camera-module" })
    #expect(camera["position"] as? String == "back")
    #expect((camera["formats"] as? [Any])?.count == 10)
  }

  @Test(.tier(.pipeline)) func devicesWithAnUnknownProfileFailsWithOneLine() async throws {
    let result = try await Self.run(["devices"], environment: ["REVUE_VIRTUAL_CAMERAS": "no-such-camera"])
    #expect(result.status == 1)
    #expect(result.error.hasPrefix("revue: no camera profile 'no-such-camera'"))
    #expect(result.error.split(separator: "\n").count == 1)
  }

  /// Counts the frames a 2 s demo receives: it needs the machine's cores, so it runs alone.
  @Test(.tier(.pipeline), .wholeProcess) func demoSendsAndReceivesOnLoopback() async throws {
    let result = try await Self.run(["demo", "--duration", "2"])
    #expect(result.status == 0, "\(result.error)")
    let received = result.output.split(separator: "\n").first { $0.hasPrefix("frames received") }
    let count = received.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    #expect(count > 20, "\(result.output)")
    #expect(result.output.contains("snapshot         /"))
  }

  @Test(.tier(.interop)) func streamPlaysInReceiveWithASnapshot() async throws {
    let port = FreePorts.rtp()
    let snapshot = FileManager.default.temporaryDirectory.appendingPathComponent("revue-test-\(port).png")
    defer { try? FileManager.default.removeItem(at: snapshot) }
    // The receiver listens before the sender starts (it says so), so the sender's first frames,
    // its keyframe among them, reach it; without 20 frames it gives up after 20 s.
    let receiver = try ChildProcess(
      Self.executable,
      ["receive", "--port", "\(port)", "--frames", "20", "--duration", "20", "--snapshot", snapshot.path])
    try await receiver.waitForError(containing: "revue: receiving", within: 30)
    let sender = try await Self.run([
      "stream", "--test-pattern", "--size", "640x480", "--to", "127.0.0.1:\(port)", "--duration", "3", "--json",
    ])
    #expect(sender.status == 0, "\(sender.error)")
    let received = try await receiver.exit(within: 30)
    #expect(received.status == 0, "\(received.error)")
    #expect(received.error.contains("wrote 640x480 snapshot"))
    #expect(FileManager.default.fileExists(atPath: snapshot.path))
    #expect(sender.output.split(separator: "\n").first.map { $0.hasPrefix("{") } == true)
  }

  /// `revue receive --sdp` with the SDP file ffmpeg wrote (VP8 on 96, or H.264 on 102; Opus on
  /// 97; the two on ports six apart) decodes ffmpeg's frames and its 1 kHz sine, whose level
  /// (an eighth of full scale: -21 dBFS) its status lines show.
  @Test(.tier(.interop), arguments: zip(["vp8", "h264"], [96, 102])) func receiveTakesFFmpegsSDPFile(
    codec: String, payloadType: Int
  ) async throws {
    let first = FreePorts.rtp(pairs: 4)
    let sender = try await FFmpegRTPSender.start(
      codec: codec, videoPort: first, videoPayloadType: payloadType == 96 ? nil : payloadType, audioPort: first + 6)
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("revue-ffmpeg-\(first).sdp")
    defer { try? FileManager.default.removeItem(at: file) }
    try sender.sdp.write(to: file, atomically: true, encoding: .utf8)
    let received = try await Self.run(["receive", "--sdp", file.path, "--json", "--duration", "4"], within: 30)
    await sender.process.stop()
    #expect(received.status == 0, "\(received.error)")
    #expect(received.error.contains("revue: receiving \(codec) from"), "\(received.error)")
    let lines = received.output.split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
    let frames = lines.last?["framesDecoded"] as? Int ?? 0
    #expect(frames >= 30, "\(received.output)")
    let levels = lines.compactMap { $0["audioLevelDBFS"] as? Double }
    #expect(levels.contains { abs($0 + 21) < 2 }, "the sine's level in \(levels) dBFS: \(received.output)")
  }

  @Test(.tier(.pipeline)) func streamAndReceiveRefuseBadInputWithOneLine() async throws {
    for (arguments, words, status) in [
      (["stream", "--size", "big"], "--size is WIDTHxHEIGHT", Int32(2)),
      (["stream", "--codec", "mpeg2"], "vp8 or h264", 2),
      (["stream", "--to", "no-such-host.invalid:5004", "--test-pattern"], "cannot resolve host", 1),
      (["receive", "--sdp", "/nonexistent.sdp"], "cannot read SDP file", 1),
    ] as [([String], String, Int32)] {
      let result = try await Self.run(arguments)
      #expect(result.status == status, "\(arguments): \(result.error)")
      #expect(result.error.contains(words), "\(arguments): \(result.error)")
    }
  }
}

/// Every shipped pipeline config runs for a moment on test sources, as `revue run` runs it.
@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(2))) struct ShippedPipelineTests {
  static let configs = [
    "camera-vp8-rtp", "camera-h264-rtp", "opus-send", "opus-receive", "receive-window", "receive-file",
    "record-camera",
  ]

  @Test(.tier(.pipeline), arguments: configs) func runsForAMoment(_ name: String) async throws {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("pipelines")
    let output = FileManager.default.temporaryDirectory.appendingPathComponent(
      "revue-\(name)-\(UInt32.random(in: 0..<UInt32.max))")
    defer { try? FileManager.default.removeItem(at: output) }
    let port = FreePorts.rtp()
    let result = try await RevueExecutableTests.run([
      "run", folder.appendingPathComponent("\(name).pipeline").path, "--duration", "2",
      "-D", name.hasPrefix("opus") ? "SOURCE=audiotestsrc is-live=true" : "SOURCE=videotestsrc is-live=true",
      "-D", "SINK=fakesink", "-D", "FILE=\(output.path)",
      "-D", "PORT=\(port)", "-D", "RTCP_PORT=\(port + 1)", "-D", "WIDTH=320", "-D", "HEIGHT=240",
    ])
    #expect(result.status == 0, "\(name): \(result.error)")
    if name == "record-camera" {
      let size = (try FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int) ?? 0
      #expect(size > 10_000, "the MP4 was not finished")
    }
  }

  @Test(.tier(.pipeline)) func aBadConfigNamesFileLineAndColumn() async throws {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent(
      "bad-\(UInt32.random(in: 0..<UInt32.max)).pipeline")
    try "videotestsrc\n  ! vp8enc targetbitrate=5 ! fakesink\n".write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }
    let result = try await RevueExecutableTests.run(["run", file.path])
    #expect(result.status == 1)
    #expect(
      result.error
        == "revue: \(file.path):2:12: element 'vp8enc' has no property 'targetbitrate' (did you mean 'target-bitrate'?)\n"
    )
  }
}

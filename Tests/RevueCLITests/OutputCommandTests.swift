import Foundation
import RevueCommandLine
import RevueProcess
import RevueSDK
import RevueTestSupport
import Testing

@testable import revue

/// `revue stream --to srt://…`, `--to rtmp://…` and `revue serve --srt`: their options, and the
/// test pattern sent to receivers that no one here wrote (ffmpeg's SRT, nginx's RTMP).
@Suite(.sharedProcess, .timeLimit(.minutes(1))) struct OutputCommandTests {
  /// How the node is stopped: SIGTERM, as Ctrl-C, with time to end its stream (up to 3 s
  /// for the end to pass through, plus the SRT latency).
  static let stopping = ChildProcess.Stopping(signal: SIGTERM, grace: 8)

  @Test(.tier(.unit)) func streamOptions() throws {
    let srt = try #require(
      try StreamOptions.parse(
        ["--to", "srt://192.0.2.7:9000", "--srt-latency", "200", "--srt-passphrase", "ten chars!"], environment: [:]))
    #expect(
      srt.output
        == .srt(
          host: "192.0.2.7", port: 9000, mode: .caller, options: .init(latency: 200, passphrase: "ten chars!")))
    #expect(srt.codec == .h264)
    let environment = ["REVUE_SRT_PASSPHRASE": "from the environment"]
    #expect(
      try StreamOptions.parse(["--to", "srt://host:9000"], environment: environment)?.output
        == .srt(host: "host", port: 9000, options: .init(passphrase: "from the environment")))
    let rtmp = try #require(try StreamOptions.parse(["--to", "rtmp://127.0.0.1:1935/live/key"], environment: [:]))
    #expect(rtmp.output == .rtmp(URL(string: "rtmp://127.0.0.1:1935/live/key")!))
    #expect(rtmp.output?.description == "rtmp://127.0.0.1:1935/live/…", "the key is not shown")
    #expect(try StreamOptions.parse(["--to", "127.0.0.1:6000"], environment: environment)?.output == nil)
    for (arguments, error) in [
      (["--srt-latency", "200"], "stream: --srt-latency goes with --to srt://HOST:PORT"),
      (["--to", "srt://host"], "stream: --to takes srt://HOST:PORT (the options as --srt-…), not 'srt://host'"),
      (["--to", "rtmp://host/live"], "stream: --to takes rtmp://HOST[:PORT]/APP/KEY, not 'rtmp://host/live'"),
      (
        ["--to", "udp://host:1"],
        "stream: --to takes HOST:PORT (RTP), srt://HOST:PORT or rtmp://HOST/APP/KEY, not 'udp://host:1'"
      ),
      (["--to", "srt://host:1", "--srt-latency", "5"], "stream: --srt-latency is 20 to 8000 milliseconds, not 5"),
      (
        ["--to", "srt://host:1", "--srt-passphrase", "short"],
        "stream: --srt-passphrase: an SRT passphrase has 10 to 79 characters, not 5"
      ),
      (["--to", "srt://host:1", "--codec", "vp8"], "stream: --to srt://host:1 goes without --codec vp8"),
      (["--to", "rtmp://h/a/k", "--simulcast"], "stream: --to rtmp://h/a/… goes without --simulcast"),
      (["--to", "rtmp://h/a/k", "--srt-latency", "200"], "stream: --srt-latency goes with --to srt://HOST:PORT"),
    ] {
      #expect(throws: UsageError(description: error)) { try StreamOptions.parse(arguments, environment: [:]) }
    }
  }

  @Test(.tier(.unit)) func serveOptions() throws {
    let srt = try #require(try ServeOptions.parse(["--srt", "9000"], environment: [:]))
    #expect(srt.srt?.address == "127.0.0.1" && srt.srt?.port == 9000 && srt.srtOptions == .init())
    let wide = try #require(
      try ServeOptions.parse(
        ["--srt", "0.0.0.0:9000", "--srt-latency", "300"], environment: ["REVUE_SRT_PASSPHRASE": "0123456789"]))
    #expect(wide.srtOptions == .init(latency: 300, passphrase: "0123456789"))
    for (arguments, error) in [
      (
        ["--srt", "0.0.0.0:9000"],
        "serve: --srt 0.0.0.0 lets anyone on the network watch the camera: give --srt-passphrase (or --srt-passphrase-file), or --no-auth to serve it without one on purpose"
      ),
      (["--rtsp", "8554", "--srt-latency", "200"], "serve: --srt-latency goes with --srt"),
      (["--srt", "port"], "serve: --srt is [ADDRESS:]PORT, such as 8554 or 127.0.0.1:8554, not 'port'"),
    ] {
      #expect(throws: UsageError(description: error)) { try ServeOptions.parse(arguments, environment: [:]) }
    }
  }

  /// `revue serve --srt` with the test pattern: ffmpeg calls and decodes 30 frames, then a
  /// second ffmpeg after it left; the node says how much it served when stopped.
  @Test(.tier(.interop)) func serveSRTServesOneCallerAfterAnother() async throws {
    let port = FreePorts.rtp()
    let server = try ChildProcess(
      RevueExecutableTests.executable,
      ["serve", "--srt", "127.0.0.1:\(port)", "--test-pattern", "--size", "640x480", "--duration", "40"],
      stopping: Self.stopping)
    try await server.waitForError(containing: "to SRT callers on srt://127.0.0.1:\(port)", within: 30)
    for _ in 0..<2 {
      let played = try await ChildProcess.run(
        URL(fileURLWithPath: "/usr/bin/ffmpeg"),
        ["-hide_banner", "-nostats", "-i", "srt://127.0.0.1:\(port)", "-frames:v", "30", "-f", "null", "-"],
        within: 20)
      #expect(played.status == 0 && played.error.contains("frame=   30"), "\(played.error.suffix(600))")
    }
    let exit = await server.stop()
    #expect(exit.status == 0, "\(exit.error)")
    #expect(exit.error.contains("revue: served "), "\(exit.error)")
  }

  /// `revue stream --test-pattern --audio --to srt://…` to ffmpeg's listener: ffmpeg decodes
  /// the video and finds the AAC audio; the node says what it sent.
  @Test(.tier(.interop)) func streamToSRT() async throws {
    let port = FreePorts.rtp()
    let ffmpeg = try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/ffmpeg"),
      [
        "-hide_banner", "-nostats", "-i", "srt://127.0.0.1:\(port)?mode=listener", "-map", "0:v", "-frames:v", "45",
        "-f", "null", "-",
      ])
    let sender = try ChildProcess(
      RevueExecutableTests.executable,
      [
        "stream", "--test-pattern", "--audio", "--size", "640x480", "--to", "srt://127.0.0.1:\(port)", "--duration",
        "40",
      ], stopping: Self.stopping)
    let played = try await ffmpeg.exit(within: 30)
    #expect(played.status == 0 && played.error.contains("frame=   45"), "\(played.error.suffix(600))")
    #expect(played.error.contains("Audio: aac"), "\(played.error.suffix(600))")
    let exit = await sender.stop()
    #expect(exit.status == 0, "\(exit.error)")
    #expect(exit.error.contains("audio buffers in MPEG-TS over SRT,"), "\(exit.error)")
  }

  /// `revue stream --test-pattern --audio --size 640x480` to `nginx`'s `live/key`, for 40 s.
  static func streamTestPattern(to nginx: NginxRTMP) throws -> ChildProcess {
    try ChildProcess(
      RevueExecutableTests.executable,
      [
        "stream", "--test-pattern", "--audio", "--size", "640x480", "--to",
        "rtmp://127.0.0.1:\(nginx.port)/live/key", "--duration", "40",
      ], stopping: Self.stopping)
  }

  /// `revue stream --test-pattern --audio --to rtmp://…` to nginx: it publishes, nginx records
  /// video that ffmpeg decodes, with AAC audio.
  @Test(.tier(.interop)) func streamToRTMP() async throws {
    let nginx = try NginxRTMP()
    defer { try? FileManager.default.removeItem(at: nginx.directory) }
    let server = try await nginx.start()
    let sender = try Self.streamTestPattern(to: nginx)
    try await sender.waitForError(containing: "in FLV over RTMP to rtmp://127.0.0.1:\(nginx.port)/live/…", within: 30)
    try await server.waitForError(containing: "publish: name='key'", within: 20)
    // A second of frames, once published: the status line counts them.
    let before = try await sender.waitForOutput(within: 10, for: "a status line") { $0.contains("\n") }
    _ = try await sender.waitForOutput(within: 10, for: "two more status lines") {
      $0.count(where: { $0 == "\n" }) >= before.count(where: { $0 == "\n" }) + 2
    }
    let exit = await sender.stop()
    #expect(exit.status == 0, "\(exit.error)")
    try await server.waitForError(containing: "disconnect", within: 10)
    _ = await server.stop()
    let recorded = try await nginx.recordedFrames()
    #expect(recorded.count == 1 && recorded[0] >= 30, "\(recorded)")
  }

  /// The sync signal over SRT: `revue stream --test-pattern --audio --to srt://…` to ffmpeg's
  /// listener, which writes 6 s of what it receives, as it came (`-c copy`), to MPEG-TS; in
  /// that file each beep is within 10 ms of its flash.
  @Test(.tier(.interop)) func srtCarriesTheSyncSignalInSync() async throws {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("revue-srt-\(UUID()).ts")
    defer { try? FileManager.default.removeItem(at: file) }
    let port = FreePorts.rtp()
    let ffmpeg = try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/ffmpeg"),
      [
        "-hide_banner", "-nostats", "-i", "srt://127.0.0.1:\(port)?mode=listener", "-c", "copy", "-t", "6", "-f",
        "mpegts", file.path,
      ])
    let sender = try ChildProcess(
      RevueExecutableTests.executable,
      [
        "stream", "--test-pattern", "--audio", "--size", "640x480", "--to", "srt://127.0.0.1:\(port)", "--duration",
        "40",
      ], stopping: Self.stopping)
    let received = try await ffmpeg.exit(within: 30)
    _ = await sender.stop()
    #expect(received.status == 0, "\(received.error.suffix(600))")
    let skews = try await MediaFileProbe.syncSkews(file)
    #expect(skews.count >= 4 && skews.allSatisfy { abs($0) <= 10 }, "A/V skews \(skews) ms")
    print("SRT: A/V skews of the sync signal as ffmpeg received it \(skews) ms")
  }

  /// The sync signal over RTMP: `revue stream --test-pattern --audio --to rtmp://…` publishes
  /// to nginx, from which ffmpeg plays 5 s and writes them as they came (`-c copy`) to FLV; in
  /// that file each beep should be within 10 ms of its flash (it is not yet: a known issue).
  @Test(.tier(.interop)) func rtmpCarriesTheSyncSignalInSync() async throws {
    let nginx = try NginxRTMP()
    defer { try? FileManager.default.removeItem(at: nginx.directory) }
    let server = try await nginx.start()
    let sender = try Self.streamTestPattern(to: nginx)
    try await server.waitForError(containing: "publish: name='key'", within: 30)
    let file = nginx.directory.appendingPathComponent("played.flv")
    let played = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/ffmpeg"),
      [
        "-hide_banner", "-nostats", "-i", "rtmp://127.0.0.1:\(nginx.port)/live/key", "-c", "copy", "-t", "5", "-f",
        "flv", file.path,
      ], within: 30)
    _ = await sender.stop()
    _ = await server.stop()
    #expect(played.status == 0, "\(played.error.suffix(600))")
    let skews = try await MediaFileProbe.syncSkews(file)
    #expect(skews.count >= 3, "A/V skews \(skews) ms")
    print("RTMP: A/V skews of the sync signal as ffmpeg played it from nginx \(skews) ms")
    // Measured 33–55 ms late, the same in nginx's own recording of what it was sent: in a run,
    // each beep 3 ms earlier than the one before, then one AAC frame (21 ms) later again; the
    // FLV's audio times step with the video frames' (0, 33, 67, 67, 100 ms…), not by AAC frame.
    withKnownIssue("the audio is 33-55 ms late in the FLV that flvmux writes") {
      #expect(skews.allSatisfy { abs($0) <= 10 }, "A/V skews \(skews) ms")
    }
  }
}

import Foundation
import RevueCommandLine
import RevueProcess
import RevueSDK
import RevueTestSupport
import Testing

@testable import revue

/// `revue serve --rtsp`: its options, a camera served to ffmpeg with a password, and one with
/// its microphone (`--audio`).
@Suite(.sharedProcess, .timeLimit(.minutes(1))) struct ServeCommandTests {
  @Test(.tier(.unit)) func options() throws {
    let defaults = try #require(try ServeOptions.parse(["--rtsp", "8554"]))
    #expect(defaults.rtsp?.address == "127.0.0.1" && defaults.rtsp?.port == 8554 && defaults.path == "/camera")
    #expect(defaults.codec == nil && defaults.user == nil && defaults.authentication == .digest)
    #expect(defaults.webrtc == nil && defaults.token == nil)
    // WebRTC viewers, alone or beside RTSP clients, with a token from the option, its file or
    // the environment.
    let webrtc = try #require(try ServeOptions.parse(["--webrtc", "8889", "--token", "t1"]))
    #expect(webrtc.webrtc?.address == "127.0.0.1" && webrtc.webrtc?.port == 8889 && webrtc.rtsp == nil)
    #expect(webrtc.token == "t1" && !webrtc.simulcast)
    #expect(try ServeOptions.parse(["--webrtc", "8889", "--simulcast"])?.simulcast == true)
    let both = try #require(
      try ServeOptions.parse(["--rtsp", "8554", "--webrtc", "0.0.0.0:8889"], environment: ["REVUE_WEBRTC_TOKEN": "t2"]))
    #expect(both.rtsp?.port == 8554 && both.webrtc?.address == "0.0.0.0" && both.token == "t2")
    #expect(!defaults.audio)
    #expect(try ServeOptions.parse(["--rtsp", "8554", "--audio"])?.audio == true)
    #expect(defaults.audioCodec == .opus)
    #expect(try ServeOptions.parse(["--rtsp", "8554", "--audio", "--audio-codec", "aac"])?.audioCodec == .aac)
    let options = try #require(
      try ServeOptions.parse([
        "--rtsp", "127.0.0.1:9000", "--path", "/door", "--user", "ann", "--password", "pw", "--auth", "basic",
        "--virtual-camera", "usb-720p-webcam", "--size", "640x360", "--fps", "15", "--codec", "vp8", "--duration", "5",
      ]))
    #expect(options.rtsp?.address == "127.0.0.1" && options.rtsp?.port == 9000 && options.path == "/door")
    #expect(options.user == "ann" && options.password == "pw" && options.authentication == .basic)
    #expect(options.source == .virtualCamera("usb-720p-webcam") && options.size.description == "640x360")
    #expect(options.fps == 15 && options.codec == .vp8 && options.duration == 5)
    #expect(try ServeOptions.parse(["--rtsp", "[::1]:8554"])?.rtsp?.address == "::1")
    // Beyond loopback: with a user, or without one on purpose.
    #expect(try ServeOptions.parse(["--rtsp", "0.0.0.0:8554", "--no-auth"])?.noAuth == true)
    #expect(
      try ServeOptions.parse(["--rtsp", "0.0.0.0:8554", "--user", "ann", "--password", "pw"])?.rtsp?.address
        == "0.0.0.0")
    for (arguments, error) in [
      ([], "serve: --rtsp [ADDRESS:]PORT, --webrtc [ADDRESS:]PORT or --srt [ADDRESS:]PORT (or more) is required"),
      (["--webrtc", "port"], "serve: --webrtc is [ADDRESS:]PORT, such as 8554 or 127.0.0.1:8554, not 'port'"),
      (
        ["--webrtc", "0.0.0.0:8889"],
        "serve: --webrtc 0.0.0.0 lets anyone on the network watch the camera: give --token (or --token-file), or --no-auth to serve it without one on purpose"
      ),
      (["--rtsp", "camera"], "serve: --rtsp is [ADDRESS:]PORT, such as 8554 or 127.0.0.1:8554, not 'camera'"),
      (["--rtsp", "70000"], "serve: --rtsp is [ADDRESS:]PORT, such as 8554 or 127.0.0.1:8554, not '70000'"),
      (["--rtsp", "8554", "--path", "camera"], "serve: --path starts with /, such as /camera, not 'camera'"),
      (["--rtsp", "8554", "--user", "ann"], "serve: --user and --password go together"),
      (["--rtsp", "8554", "--auth", "none"], "serve: --auth is basic or digest, not 'none'"),
      (["--rtsp", "8554", "--audio", "--audio-codec", "mp3"], "serve: --audio-codec is opus or aac, not 'mp3'"),
      (["--rtsp", "8554", "--audio-codec", "aac"], "serve: --audio-codec goes with --audio"),
      (["--rtsp", "8554", "--simulcast"], "serve: --simulcast goes with --webrtc (RTSP clients take one layer)"),
      (
        ["--rtsp", "0.0.0.0:8554"],
        "serve: 0.0.0.0 lets anyone on the network watch the camera: give --user and --password, or --no-auth to serve it without them on purpose"
      ),
      (
        ["--rtsp", "[::]:8554"],
        "serve: :: lets anyone on the network watch the camera: give --user and --password, or --no-auth to serve it without them on purpose"
      ),
    ] {
      #expect(throws: UsageError(description: error)) { try ServeOptions.parse(arguments) }
    }
  }

  /// The password comes from `--password-file` (its trailing newline trimmed) or
  /// `REVUE_RTSP_PASSWORD` (with `--user`) as from `--password`, which every local user reads in
  /// /proc/PID/cmdline: the option before the file before the variable.
  @Test(.tier(.interop)) func thePasswordComesFromAFileOrTheEnvironment() throws {
    let (directory, files) = try SRTPCommandTests.secretFiles(["pw from a file\n", "\n"])
    defer { try? FileManager.default.removeItem(at: directory) }
    do {
      let user = ["--rtsp", "8554", "--user", "ann"]
      let environment = ["REVUE_RTSP_PASSWORD": "pw from the environment"]
      #expect(
        try ServeOptions.parse(user + ["--password-file", files[0]], environment: [:])?.password == "pw from a file")
      #expect(try ServeOptions.parse(user, environment: environment)?.password == "pw from the environment")
      #expect(
        try ServeOptions.parse(user + ["--password-file", files[0]], environment: environment)?.password
          == "pw from a file")
      #expect(try ServeOptions.parse(user + ["--password", "pw"], environment: environment)?.password == "pw")
      // Without --user the variable is not read: no one to let in.
      let open = try ServeOptions.parse(["--rtsp", "8554"], environment: environment)
      #expect(open?.user == nil && open?.password == nil)
      for (arguments, error) in [
        (
          user + ["--password", "pw", "--password-file", files[0]],
          "serve: give --password or --password-file, not both"
        ),
        (user + ["--password-file", files[1]], "serve: --password-file: '\(files[1])' is empty"),
        (["--rtsp", "8554", "--password-file", files[0]], "serve: --user and --password go together"),
        (user, "serve: --user and --password go together"),
      ] {
        #expect(throws: UsageError(description: error)) { try ServeOptions.parse(arguments, environment: [:]) }
      }
    }
  }

  /// The test pattern served on a free port with a password: ffmpeg with it decodes frames, and
  /// the node says how much it served when stopped.
  @Test(.tier(.interop)) func aPasswordProtectedCameraPlaysInFFmpeg() async throws {
    let server = try ChildProcess(
      RevueExecutableTests.executable,
      [
        "serve", "--rtsp", "127.0.0.1:0", "--test-pattern", "--size", "640x480", "--user", "ann", "--duration", "40",
        "--json",
      ], environment: ["REVUE_RTSP_PASSWORD": "pw"])
    try await server.waitForError(containing: "(UDP and TCP, digest authentication)", within: 30)
    // The status lines (one a second) name the URL, with the port the system chose.
    let status = try await server.waitForOutput(within: 10, for: "a status line") { $0.contains("\n") }
    let line = try #require(status.split(separator: "\n").first)
    let fields = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    let url = try #require(fields["url"] as? String)
    #expect(url.hasPrefix("rtsp://127.0.0.1:") && url.hasSuffix("/camera"), "\(url)")
    let played = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/ffmpeg"),
      [
        "-hide_banner", "-nostats", "-rtsp_transport", "tcp", "-i",
        url.replacingOccurrences(of: "//", with: "//ann:pw@"),
        "-frames:v", "10", "-f", "null", "-",
      ], within: 30)
    #expect(played.status == 0 && played.error.contains("frame=   10"), "\(played.error.suffix(600))")
    let exit = await server.stop()
    #expect(exit.status == 0, "\(exit.error)")
    #expect(exit.error.contains("1 encoder(s) started"), "\(exit.error)")
  }

  /// `--audio` with the test pattern: the media has an Opus stream (or with `--audio-codec aac`
  /// an AAC one) beside the video (ffprobe lists it), which ffmpeg decodes: three seconds of it,
  /// with the sync signal's beeps in it (half of full scale, -6 dB), not silence.
  @Test(.tier(.interop), arguments: [AudioCodec.opus, .aac]) func theAudioIsAStreamFFmpegDecodes(_ codec: AudioCodec)
    async throws
  {
    let server = try ChildProcess(
      RevueExecutableTests.executable,
      [
        "serve", "--rtsp", "127.0.0.1:0", "--test-pattern", "--size", "640x480", "--audio", "--audio-codec",
        codec.rawValue, "--duration", "40", "--json",
      ]
    )
    try await server.waitForError(containing: "in \(codec == .opus ? "Opus" : "AAC") on rtsp://", within: 30)
    let status = try await server.waitForOutput(within: 10, for: "a status line") { $0.contains("\n") }
    let line = try #require(status.split(separator: "\n").first)
    let fields = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    let url = try #require(fields["url"] as? String)
    let probed = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/ffprobe"),
      [
        "-hide_banner", "-rtsp_transport", "tcp", "-i", url, "-show_entries",
        "stream=codec_type,codec_name,sample_rate", "-of", "csv",
      ], within: 30)
    #expect(probed.status == 0, "\(probed.error.suffix(600))")
    let streams = probed.output.split(separator: "\n").map(String.init)
    #expect(streams.contains("stream,\(codec.rawValue),audio,48000"), "ffprobe listed \(streams)")
    #expect(streams.contains("stream,h264,video"), "ffprobe listed \(streams)")
    let decoded = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/ffmpeg"),
      [
        "-hide_banner", "-nostats", "-rtsp_transport", "tcp", "-i", url, "-map", "0:a", "-t", "3", "-af",
        "volumedetect", "-f", "null", "-",
      ], within: 30)
    #expect(decoded.status == 0, "\(decoded.error.suffix(600))")
    #expect(decoded.error.contains("(\(codec.rawValue) (native) -> "), "\(decoded.error.suffix(600))")
    let samples = decoded.error.split(separator: "n_samples: ").last.flatMap { Int($0.prefix { $0.isNumber }) } ?? 0
    let loudest =
      decoded.error.split(separator: "max_volume: ").last.flatMap { Double($0.prefix { $0 != " " }) } ?? -.infinity
    print("ffmpeg decoded \(samples) samples of the RTSP \(codec) audio, the loudest at \(loudest) dB")
    // Three seconds at 48 kHz (mono or stereo), give or take the start.
    #expect(samples >= 48_000 * 5 / 2, "\(decoded.error.suffix(600))")
    #expect(loudest > -12, "\(decoded.error.suffix(600))")
    let exit = await server.stop()
    #expect(exit.status == 0, "\(exit.error)")
    #expect(exit.error.contains("audio buffers, "), "\(exit.error)")
  }
}

import Foundation
import RevueCommandLine
import RevueTestSupport
import Testing

@testable import revue

@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(1))) struct StreamOptionsTests {
  @Test func defaultsAndEveryOption() throws {
    let defaults = try #require(try StreamOptions.parse([]))
    #expect(defaults.size.description == "1280x720" && defaults.fps == 30 && defaults.codec == .vp8)
    #expect(defaults.destination == "127.0.0.1:5004" && !defaults.audio && !defaults.simulcast)
    #expect(!defaults.fixedBitrate)
    let options = try #require(
      try StreamOptions.parse([
        "--virtual-camera", "usb-720p-webcam", "--size", "640x360", "--fps", "15", "--codec", "h264", "--bitrate",
        "800000", "--audio", "--simulcast", "--to", "127.0.0.1:6000", "--sdp", "room.sdp", "--duration", "5", "--json",
        "--fixed-bitrate",
      ]))
    #expect(options.source == .virtualCamera("usb-720p-webcam"))
    #expect(options.size.description == "640x360" && options.fps == 15 && options.codec == .h264)
    #expect(options.bitrate == 800_000 && options.audio && options.simulcast && options.json && options.fixedBitrate)
    #expect(options.destination == "127.0.0.1:6000" && options.sdpPath == "room.sdp" && options.duration == 5)
    #expect(try StreamOptions.parse(["--help"]) == nil)
    #expect(throws: UsageError(description: "stream: unknown option '--layers'")) {
      try StreamOptions.parse(["--layers"])
    }
  }

  /// The WHIP token comes from `--token-file` (its trailing newline trimmed) or
  /// `REVUE_WHIP_TOKEN` (with `--whip`) as from `--token`, which every local user reads in
  /// /proc/PID/cmdline: the option before the file before the variable.
  @Test func theTokenComesFromAFileOrTheEnvironment() throws {
    let (directory, files) = try SRTPCommandTests.secretFiles(["t0ken\r\n"])
    defer { try? FileManager.default.removeItem(at: directory) }
    do {
      let whip = ["--whip", "whip+https://sfu.example/whip"]
      let environment = ["REVUE_WHIP_TOKEN": "from the environment"]
      #expect(try StreamOptions.parse(whip + ["--token-file", files[0]], environment: [:])?.token == "t0ken")
      #expect(try StreamOptions.parse(whip, environment: environment)?.token == "from the environment")
      #expect(try StreamOptions.parse(whip + ["--token-file", files[0]], environment: environment)?.token == "t0ken")
      #expect(try StreamOptions.parse(whip + ["--token", "t"], environment: environment)?.token == "t")
      // Plain RTP has no token: the variable is not read.
      #expect(try StreamOptions.parse([], environment: environment)?.token == nil)
      for (arguments, error) in [
        (whip + ["--token", "t", "--token-file", files[0]], "stream: give --token or --token-file, not both"),
        (["--token-file", files[0]], "stream: --token goes with --whip"),
        (
          whip + ["--token-file", "/nonexistent/token"],
          "stream: --token-file: cannot read '/nonexistent/token': No such file or directory"
        ),
      ] {
        #expect(throws: UsageError(description: error)) { try StreamOptions.parse(arguments, environment: [:]) }
      }
    }
  }

  /// `--screen`: the X11 screen, at the default profile's 15 fps unless `--fps` says.
  @Test func screen() throws {
    let screen = try #require(try StreamOptions.parse(["--screen"]))
    #expect(screen.source == .screen && screen.fps == 15 && screen.size.description == "1280x720")
    let fast = try #require(try StreamOptions.parse(["--fps", "30", "--screen", "--size", "640x480"]))
    #expect(fast.source == .screen && fast.fps == 30 && fast.size.description == "640x480")
  }
}

import Foundation
import RevueCommandLine
import RevueProcess
import RevueTestSupport
import Testing

@testable import revue

/// `revue receive --whep`: its options, and another node's `revue serve --webrtc` played with
/// a snapshot; a refused token said in one line, never printed.
@Suite(.sharedProcess, .timeLimit(.minutes(2))) struct WHEPCommandTests {
  /// `--whep` with its token from the option, its file or `REVUE_WHEP_TOKEN`; the RTP options
  /// beside it, a token without it and a URL of another scheme are usage errors.
  @Test(.tier(.unit)) func options() throws {
    let url = "http://127.0.0.1:8889/camera/whep"
    let plain = try #require(try ReceiveOptions.parse(["--whep", url, "--frames", "30", "--snapshot", "a.png"]))
    #expect(plain.whep?.absoluteString == url && plain.token == nil && plain.frames == 30)
    #expect(plain.snapshotPath == "a.png")
    // The token from the option, its file or the environment (REVUE_WHEP_TOKEN, with --whep only).
    #expect(try ReceiveOptions.parse(["--whep", url, "--token", "t1"])?.token == "t1")
    #expect(try ReceiveOptions.parse(["--whep", url], environment: ["REVUE_WHEP_TOKEN": "t2"])?.token == "t2")
    #expect(try ReceiveOptions.parse(["--port", "5004"], environment: ["REVUE_WHEP_TOKEN": "t2"])?.token == nil)
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("revue-whep-\(UUID()).token")
    try "t3\n".write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }
    #expect(
      try ReceiveOptions.parse(["--whep", url, "--token-file", file.path], environment: ["REVUE_WHEP_TOKEN": "t2"])?
        .token == "t3")
    // An SRTP key in the environment is not the WHEP stream's.
    #expect(try ReceiveOptions.parse(["--whep", url], environment: ["REVUE_SRTP_KEY": "x"])?.srtpKey == nil)
    #expect(
      try ReceiveOptions.parse(["whep+https://node.example/camera/whep"].flatMap { ["--whep", $0] })?.whep != nil)
    for (arguments, error) in [
      (
        ["--whep", "rtp://127.0.0.1:5004"],
        "receive: --whep takes https://HOST/PATH (or http://), not 'rtp://127.0.0.1:5004'"
      ),
      (["--whep", "camera"], "receive: --whep takes https://HOST/PATH (or http://), not 'camera'"),
      (["--whep", url, "--port", "5004"], "receive: --whep goes without --port"),
      (["--whep", url, "--sdp", "a.sdp"], "receive: --whep goes without --sdp"),
      (["--whep", url, "--codec", "h264"], "receive: --whep goes without --codec"),
      (["--whep", url, "--latency", "100"], "receive: --whep goes without --latency"),
      (["--whep", url, "--from", "127.0.0.1"], "receive: --whep goes without --from"),
      (["--whep", url, "--srtp-key", "abc"], "receive: --whep goes without --srtp-key"),
      (["--token", "t"], "receive: --token goes with --whep"),
      (["--whep", url, "--token", "t", "--token-file", file.path], "receive: give --token or --token-file, not both"),
      (["--whep"], "receive: --whep needs a value"),
    ] {
      #expect(throws: UsageError(description: error), "\(arguments)") { try ReceiveOptions.parse(arguments) }
    }
  }

  /// Another node serves the test pattern with sound behind a token; `revue receive --whep`
  /// decodes 30 frames, writes a snapshot and deletes its session, and the token (from the
  /// environment) is never printed. A wrong token: the server's 401, in one line.
  @Test(.tier(.interop)) func receivePlaysAnotherNodesBroadcastWithASnapshot() async throws {
    let (node, page) = try await WatchInABrowserTests.node(token: "s3cret")
    var components = try #require(URLComponents(url: page, resolvingAgainstBaseURL: false))
    components.fragment = nil
    components.path += "whep"
    let url = try #require(components.url)
    #expect(url.path == "/camera/whep", "\(url)")
    let snapshot = FileManager.default.temporaryDirectory.appendingPathComponent("revue-whep-\(UUID()).png")
    defer { try? FileManager.default.removeItem(at: snapshot) }

    let received = try await RevueExecutableTests.run(
      ["receive", "--whep", url.absoluteString, "--frames", "30", "--snapshot", snapshot.path, "--duration", "30"],
      environment: ["REVUE_WHEP_TOKEN": "s3cret"], within: 45)
    #expect(received.status == 0, "\(received.error)")
    #expect(received.error.contains("revue: receiving vp8 from \(url.absoluteString) over WebRTC (WHEP)"))
    #expect(received.error.contains("revue: playing its Opus audio") || received.error.contains("audio is not played"))
    #expect(received.error.contains("wrote 640x480 snapshot"), "\(received.error)")
    #expect(FileManager.default.fileExists(atPath: snapshot.path))
    #expect(!received.error.contains("s3cret") && !received.output.contains("s3cret"))
    // The node's viewer is gone: its status lines say 0 once the DELETE came.
    try await node.waitForOutput(within: 10, for: "no viewer left") { output in
      let lines = output.split(separator: "\n")
      guard let watched = lines.lastIndex(where: { $0.contains("\"viewersConnected\":1") }) else { return false }
      return lines[watched...].contains { $0.contains("\"viewers\":0") }
    }

    let refused = try await RevueExecutableTests.run(
      ["receive", "--whep", url.absoluteString, "--token", "wrong", "--duration", "5"], within: 30)
    #expect(refused.status != 0)
    let last = refused.error.split(separator: "\n").last ?? ""
    #expect(last.contains("answered 401") && !refused.error.contains("wrong"), "\(refused.error)")
    await node.stop()
  }
}

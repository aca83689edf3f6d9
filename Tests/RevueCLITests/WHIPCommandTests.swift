import Foundation
import RevueProcess
import RevueTestSupport
import Testing

/// `revue stream --whip`: the camera published over WebRTC to the aiortc WHIP endpoint, which
/// decodes it; the session deleted when the node stops; refused tokens and options that do not
/// go with WebRTC said in one line.
@Suite(.tier(.interop), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct WHIPCommandTests {
  @Test func streamPublishesToAWHIPEndpoint() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--token", "s3cret"])
    let node = try ChildProcess(
      RevueExecutableTests.executable,
      [
        "stream", "--virtual-camera", "usb-1080p-webcam", "--size", "640x480", "--whip",
        url.absoluteString + "?sig=abc", "--duration", "4", "--json",
      ], environment: ["REVUE_WHIP_TOKEN": "s3cret"])
    try await endpoint.waitForOutput(containing: "frames 30", within: 30)
    let exit = try await node.exit(within: 30)
    #expect(exit.status == 0, "\(exit.error)")
    #expect(exit.output.contains("\"connectionState\":\"connected\""), "\(exit.output)")
    #expect(!exit.error.contains("s3cret"), "the token was printed: \(exit.error)")
    #expect(!exit.error.contains("sig=abc") && exit.error.contains("/whip/camera?…"), "\(exit.error)")
    try await endpoint.waitForOutput(containing: "deleted session", within: 10)
    await endpoint.stop()
  }

  /// Issue 29: an https endpoint whose certificate comes from a private authority is refused in
  /// one line naming the host, and published to once `REVUE_TLS_CA_FILE` names the authority
  /// (the POST and the DELETE over TLS).
  @Test func streamPublishesOverHTTPSToAnAuthorityGivenInTheEnvironment() async throws {
    let certificate = try await TestCertificate.make()
    defer { certificate.remove() }
    let (endpoint, url) = try await WHIPEndpoint.start(certificate: certificate)
    let arguments = [
      "stream", "--virtual-camera", "usb-1080p-webcam", "--size", "640x480", "--whip", url.absoluteString,
      "--duration", "3",
    ]
    let refused = try await ChildProcess.run(RevueExecutableTests.executable, arguments, within: 30)
    #expect(refused.status != 0, "\(refused.error)")
    #expect(
      refused.error.contains("the TLS certificate of 127.0.0.1 is not trusted")
        && refused.error.contains("REVUE_TLS_CA_FILE"), "\(refused.error)")
    let node = try ChildProcess(
      RevueExecutableTests.executable, arguments, environment: ["REVUE_TLS_CA_FILE": certificate.certificate.path])
    try await endpoint.waitForOutput(containing: "frames 30", within: 30)
    let exit = try await node.exit(within: 30)
    #expect(exit.status == 0, "\(exit.error)")
    try await endpoint.waitForOutput(containing: "deleted session", within: 10)
    await endpoint.stop()
  }

  /// Issue 25: the endpoint killed mid-stream (no duration given) ends the node within 5 s and
  /// a little, non-zero, its last line saying why.
  @Test func streamExitsWhenTheEndpointDies() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start()
    let node = try ChildProcess(
      RevueExecutableTests.executable,
      ["stream", "--virtual-camera", "usb-1080p-webcam", "--size", "640x480", "--whip", url.absoluteString])
    try await endpoint.waitForOutput(containing: "frames 30", within: 30)
    await endpoint.stop()
    let exit = try await node.exit(within: 8)
    #expect(exit.status != 0, "\(exit.error)")
    // Its last line of its own: a log line (the DELETE that cannot reach the dead endpoint) may
    // come after it.
    let last = exit.error.split(separator: "\n").last { !$0.hasPrefix("revue [") } ?? ""
    #expect(last.hasPrefix("revue: the WHIP session with ") && last.contains("stopped answering"), "\(exit.error)")
  }

  @Test func aRefusedTokenAndOptionsThatDoNotGoWithWebRTCAreSaid() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--token", "s3cret"])
    let refused = try await RevueExecutableTests.run(
      ["stream", "--virtual-camera", "usb-1080p-webcam", "--whip", url.absoluteString, "--token", "wrong"])
    #expect(refused.status != 0)
    #expect(refused.error.contains("answered 401"), "\(refused.error)")
    #expect(!refused.error.contains("wrong"), "the token was printed: \(refused.error)")
    await endpoint.stop()
    for (arguments, says) in [
      (["--whip", url.absoluteString, "--to", "127.0.0.1:5004"], "--whip goes without --to"),
      (["--whip", url.absoluteString, "--srtp"], "--whip goes without --srtp"),
      (["--token", "t"], "--token goes with --whip"),
      (["--whip", "rtp://127.0.0.1:5004"], "--whip takes whip+https://"),
    ] {
      let result = try await RevueExecutableTests.run(["stream"] + arguments)
      #expect(result.status != 0 && result.error.contains(says), "\(arguments): \(result.error)")
    }
  }
}

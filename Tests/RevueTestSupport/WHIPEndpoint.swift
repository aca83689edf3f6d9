import Foundation
import RevueProcess
import Testing

/// The WHIP endpoints of the tests, peers no one on the team wrote: aiortc's
/// (Tests/Peers/whip_endpoint.py, on Debian's python3-aiortc), which prints `frames N` as it
/// decodes, and a front end to Janus's VideoRoom (Tests/Peers/janus_whip.py), which prints
/// `published room ROOM feed FEED`. Both print `deleted session` when a session is deleted.
public enum WHIPEndpoint {
  /// Starts the endpoint with `options` (`--token T`, `--status CODE`, `--malformed-answer`,
  /// `--unreachable`, `--close-after-30-frames`, `--location-origin ORIGIN`, `--fps`…) on a free
  /// port of 127.0.0.1, or of `namespace`'s address when given (run inside it), within 20 s;
  /// returns it and the URL to publish to. With `certificate`, it serves https (`whip+https://`).
  public static func start(
    _ options: [String] = [], in namespace: NetworkNamespace? = nil, certificate: TestCertificate? = nil
  ) async throws -> (endpoint: ChildProcess, url: URL) {
    let tls = certificate.map { ["--tls", $0.certificate.path, $0.key.path] } ?? []
    return try await run(
      "whip_endpoint.py", options + tls, path: "/whip/camera", in: namespace,
      scheme: certificate == nil ? "whip+http" : "whip+https")
  }

  /// Starts the WHIP front end of `janus`'s VideoRoom (Janus started with the `videoroom`
  /// plugin); returns it and the URL that publishes into `room`, a room made with a cap of
  /// `bitrate` bits per second on a publisher's video when given (Janus tells publishers so, in
  /// RTCP REMB).
  public static func janusVideoRoom(_ janus: Janus, room: Int, bitrate: Int? = nil) async throws -> (
    endpoint: ChildProcess, url: URL
  ) {
    try await run(
      "janus_whip.py", [janus.url.absoluteString] + (bitrate.map { ["--bitrate", "\($0)"] } ?? []),
      path: "/whip/\(room)")
  }

  /// Starts Tests/Peers/hostile_http.py in `mode` (`trickle`, `flood`, `record`, or `redirect`
  /// with the URL to redirect to in `arguments`) on a free port of 127.0.0.1; returns it and the
  /// URL to publish to.
  public static func hostile(_ mode: String, _ arguments: [String] = []) async throws -> (
    endpoint: ChildProcess, url: URL
  ) {
    try await run("hostile_http.py", [mode] + arguments, path: "/whip/camera")
  }

  /// Waits until aiortc's endpoint has decoded 50 audio and 30 video frames.
  public static func waitForAudioAndVideo(_ endpoint: ChildProcess) async throws {
    try await endpoint.waitForOutput(within: 20, for: "50 audio and 30 video frames") { output in
      let lines = output.split(separator: "\n")
      return lines.contains { $0.hasPrefix("audio frames 50 ") } && lines.contains { $0.hasPrefix("frames 30 ") }
    }
  }

  private static func run(
    _ script: String, _ arguments: [String], path: String, in namespace: NetworkNamespace? = nil,
    scheme: String = "whip+http"
  ) async throws -> (ChildProcess, URL) {
    let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../Peers/\(script)").standardized
    let port = FreePorts.tcp()
    var command = ["/usr/bin/python3", file.path, "\(port)"] + arguments
    if let namespace { command += ["--address", namespace.address] }
    let (program, programArguments) =
      namespace?.command(command) ?? (URL(fileURLWithPath: command[0]), Array(command.dropFirst()))
    let endpoint = try ChildProcess(program, programArguments)
    try await endpoint.waitForOutput(containing: "listening", within: 20)
    return (endpoint, URL(string: "\(scheme)://\(namespace?.address ?? "127.0.0.1"):\(port)\(path)")!)
  }
}

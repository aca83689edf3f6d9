import Foundation
import RevueProcess
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Debian's Janus (1.1) started for a test, in the foreground, with a configuration of its own:
/// its HTTP API on 127.0.0.1 at a free port, only the plugins the test names, and its ICE ports
/// in a range of their own (40000–40999, away from ``FreePorts``'). Janus gathers ICE
/// candidates on this machine's own addresses (it leaves out loopback whatever its
/// `ice_enforce_list` says), so media stays on this machine.
///
/// Its HTTP API is JSON: ``request(_:_:)`` posts a request, ``attach(_:)`` opens a session with
/// a plugin handle (``JanusHandle``).
public final class Janus: Sendable {
  /// The API's root, `http://127.0.0.1:PORT/janus`.
  public let url: URL
  private let process: ChildProcess
  private let directory: URL

  /// What Janus answered that was not what the test asked for.
  public struct APIError: Error, CustomStringConvertible {
    /// Janus's answer, or what went wrong reaching it.
    public var description: String
  }

  /// Starts Janus with `plugins` (`streaming`, `videoroom`…), each with the configuration
  /// `configurations` gives it (none: an empty one), and waits, up to 10 s, until its HTTP API
  /// answers.
  public static func start(
    plugins: [String] = ["streaming"], configurations: [String: String] = [:]
  ) async throws -> Janus {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("revue-janus-\(UUID().uuidString)")
    let library = URL(fileURLWithPath: "/usr/lib/x86_64-linux-gnu/janus")
    for (folder, names) in [("plugins", plugins), ("transports", ["http"])] {
      let linked = directory.appendingPathComponent(folder)
      try FileManager.default.createDirectory(at: linked, withIntermediateDirectories: true)
      for name in names {
        try FileManager.default.createSymbolicLink(
          at: linked.appendingPathComponent("libjanus_\(name).so"),
          withDestinationURL: library.appendingPathComponent("\(folder)/libjanus_\(name).so"))
      }
    }
    let port = FreePorts.tcp()
    let files = [
      "janus.jcfg": """
      general: {
        configs_folder = "\(directory.path)"
        plugins_folder = "\(directory.path)/plugins"
        transports_folder = "\(directory.path)/transports"
        events_folder = "\(directory.path)/none"
        loggers_folder = "\(directory.path)/none"
        debug_level = 4
        session_timeout = 120
      }
      media: { rtp_port_range = "40000-40999" }
      nat: { ice_enforce_list = "lo" }
      events: { broadcast = false }
      """,
      "janus.transport.http.jcfg": """
      general: { json = "compact", base_path = "/janus", http = true, ip = "127.0.0.1", port = \(port), https = false }
      admin: { admin_http = false }
      """,
    ].merging(plugins.map { ("janus.plugin.\($0).jcfg", configurations[$0] ?? "general: {}\n") }) { first, _ in first }
    for (name, text) in files {
      try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }
    let process = try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/janus"),
      ["-F", directory.path, "-C", directory.appendingPathComponent("janus.jcfg").path])
    let janus = Janus(url: URL(string: "http://127.0.0.1:\(port)/janus")!, process: process, directory: directory)
    do {
      try await process.waitForOutput(containing: "HTTP webserver started", within: 10)
    } catch {
      await janus.stop()
      throw error
    }
    return janus
  }

  private init(url: URL, process: ChildProcess, directory: URL) {
    self.url = url
    self.process = process
    self.directory = directory
  }

  /// The CPU time Janus has used so far, in seconds (``ChildProcess/cpuSeconds``).
  public var cpuSeconds: Double? { process.cpuSeconds }

  /// Stops Janus (SIGTERM, then SIGKILL) and removes its configuration; returns what it printed.
  @discardableResult public func stop() async -> ChildProcess.Exit {
    let exit = await process.stop()
    try? FileManager.default.removeItem(at: directory)
    return exit
  }

  /// Posts `body` (a `transaction` is added) to the API at `path` (`""`, `/SESSION`,
  /// `/SESSION/HANDLE`) and returns Janus's answer.
  /// - Throws: ``APIError`` when Janus answers `error` or cannot be reached within 10 s.
  public func request(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
    var message = body
    message["transaction"] = UUID().uuidString
    var request = URLRequest(url: URL(string: url.absoluteString + path)!, timeoutInterval: 10)
    request.httpMethod = "POST"
    request.httpBody = try JSONSerialization.data(withJSONObject: message)
    return try await Self.answer(to: request)
  }

  /// Opens a session and attaches it to `plugin` (`janus.plugin.streaming`…).
  public func attach(_ plugin: String) async throws -> JanusHandle {
    let session = try Self.id(in: await request("", ["janus": "create"]))
    let handle = try Self.id(in: await request("/\(session)", ["janus": "attach", "plugin": plugin]))
    return JanusHandle(janus: self, session: session, handle: handle)
  }

  /// The JSON object Janus answered `request` with.
  static func answer(to request: URLRequest) async throws -> [String: Any] {
    let data = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, Error>) in
      URLSession.shared.dataTask(with: request) { data, _, error in
        if let data { continuation.resume(returning: data) } else { continuation.resume(throwing: error!) }
      }.resume()
    }
    guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
      throw APIError(description: "not a JSON object: \(String(decoding: data, as: UTF8.self))")
    }
    if object["janus"] as? String == "error" { throw APIError(description: "Janus: \(object)") }
    return object
  }

  private static func id(in answer: [String: Any]) throws -> UInt64 {
    guard let id = (answer["data"] as? [String: Any])?["id"] as? NSNumber else {
      throw APIError(description: "no id in \(answer)")
    }
    return id.uint64Value
  }
}

/// A Janus session attached to one plugin.
public struct JanusHandle: Sendable {
  /// The server.
  public let janus: Janus
  /// The session's id.
  public let session: UInt64
  /// The plugin handle's id.
  public let handle: UInt64

  /// Sends `body` to the plugin (with `jsep`, an SDP offer or answer, if any) and returns the
  /// plugin's data for a request it answers at once (`create`, `list`…), or nil when it only
  /// acknowledged (its event comes through ``nextEvent(within:)``).
  /// - Throws: ``Janus/APIError`` when the plugin answers with an `error`.
  @discardableResult
  public func message(_ body: [String: Any], jsep: (type: String, sdp: String)? = nil) async throws -> [String: Any]? {
    var message: [String: Any] = ["janus": "message", "body": body]
    if let jsep { message["jsep"] = ["type": jsep.type, "sdp": jsep.sdp] }
    let answer = try await janus.request("/\(session)/\(handle)", message)
    guard let data = (answer["plugindata"] as? [String: Any])?["data"] as? [String: Any] else { return nil }
    if let error = data["error"] { throw Janus.APIError(description: "\(body["request"] ?? "request"): \(error)") }
    return data
  }

  /// Creates a streaming mountpoint (on a handle of `janus.plugin.streaming`) numbered `id`
  /// that takes RTP video (payload type 96, `codec` `vp8` or `h264`) on 127.0.0.1:`port` and
  /// exchanges RTCP on `port + 1`: Janus sends its keyframe requests (PLI) to where the
  /// sender's RTCP comes from. The request is the one of docs/janus.md.
  public func createVideoMountpoint(id: Int, port: Int, codec: String) async throws {
    var media: [String: Any] = [
      "type": "video", "mid": "v", "port": port, "rtcpport": port + 1, "pt": 96, "codec": codec,
    ]
    if codec == "h264" { media["fmtp"] = "profile-level-id=42e01f;packetization-mode=1" }
    try await message(["request": "create", "type": "rtp", "id": id, "media": [media]])
  }

  /// The session's next event (a long poll), within `seconds`.
  public func nextEvent(within seconds: Double = 10) async throws -> [String: Any] {
    let request = URLRequest(
      url: URL(string: janus.url.absoluteString + "/\(session)?maxev=1")!, timeoutInterval: seconds)
    return try await Janus.answer(to: request)
  }

  /// Destroys the session (and its handle and PeerConnection).
  public func destroy() async {
    _ = try? await janus.request("/\(session)", ["janus": "destroy"])
  }
}

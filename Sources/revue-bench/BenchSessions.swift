import Foundation
import RevueProcess
import RevueSDK

extension BenchCommand {
  /// The sessions scenario: a node that serves (`revue serve --rtsp … --webrtc …`, the test
  /// pattern at 640×480) and clients that come and go one after another, as an NVR's probes or
  /// viewers opening and closing a page do: ffprobe over RTSP (UDP and TCP in turn), then
  /// Revue's own WHEP player (`revue receive --whep URL --duration 1`). Each session brings the
  /// node streaming threads that end with it; what counts is the node's memory, threads and file
  /// descriptors after the last client against after the ``settled``th, when its pools and
  /// caches are made. No gst-launch side: gst-launch serves neither RTSP nor WHEP.
  struct Sessions: Sendable {
    /// The kind of client.
    enum Client: String, Sendable, Hashable, CaseIterable {
      case rtsp, webrtc

      /// How the report names it.
      var title: String { self == .rtsp ? "RTSP (ffprobe)" : "WebRTC (WHEP)" }
    }

    /// Clients, one after another, of each kind.
    var count = 200
    /// The clients after which the node's readings are the reference.
    var settled = 40

    /// What the node held after the ``settled``th session and after the last, and the sessions
    /// that failed.
    struct Readings: Sendable {
      var settled: ChildProcess.Reading
      var end: ChildProcess.Reading
      var failed: Int
    }

    /// Serves the clients of each kind in turn; `progress` gets a line every ``settled`` sessions.
    /// - Throws: ``RevueError`` when the node does not start or ends before the last client.
    func run(progress: @Sendable (String) -> Void = { _ in }) async throws -> [Client: Readings] {
      let (rtsp, webrtc) = (try PacketSink.freePort(), try PacketSink.freePort())
      let node = try ChildProcess.revueCommand([
        "serve", "--rtsp", "127.0.0.1:\(rtsp)", "--webrtc", "127.0.0.1:\(webrtc)", "--test-pattern", "--size",
        "640x480", "--duration", "3600",
      ])
      defer { node.terminate() }
      let serving = await node.wait(within: 20) { $0.error.components(separatedBy: "revue: serving").count > 2 }
      guard serving == .satisfied else {
        throw RevueError(.gstreamer, "sessions: the node did not start: \(node.written.error.suffix(600))")
      }
      var result: [Client: Readings] = [:]
      for client in Client.allCases {
        var settled: ChildProcess.Reading?
        var failed = 0
        for index in 1...count {
          let session = try Self.client(
            client, rtsp: "rtsp://127.0.0.1:\(rtsp)/camera", whep: "http://127.0.0.1:\(webrtc)/camera/whep",
            tcp: index % 2 == 0)
          if await !session.wait(stoppingAfter: 15).succeeded { failed += 1 }
          guard let reading = node.reading else {
            throw RevueError(
              .gstreamer,
              "sessions: the node ended after \(index) \(client) sessions: \(node.written.error.suffix(600))")
          }
          if index == self.settled { settled = reading }
          if index % self.settled == 0 {
            progress(
              String(
                format: "  %@ %d sessions: %.1f MiB, %d threads, %d fds, %d failed", client.rawValue, index,
                Double(reading.resident) / 1024, reading.threads, reading.descriptors, failed))
          }
          if index == count { result[client] = Readings(settled: settled ?? reading, end: reading, failed: failed) }
        }
      }
      return result
    }

    /// One client's session: ffprobe reads the stream's description and first packets over RTSP
    /// (`tcp`: interleaved, or UDP), or Revue's WHEP player plays a second of it.
    private static func client(_ client: Client, rtsp: String, whep: String, tcp: Bool) throws -> ChildProcess {
      switch client {
      case .rtsp:
        try ChildProcess(
          URL(fileURLWithPath: "/usr/bin/ffprobe"),
          [
            "-v", "error", "-rtsp_transport", tcp ? "tcp" : "udp", "-i", rtsp, "-show_entries", "stream=codec_name",
            "-of", "csv",
          ])
      case .webrtc:
        try ChildProcess.revueCommand(["receive", "--whep", whep, "--duration", "1"])
      }
    }
  }

  /// The sessions scenario, as the report's metrics.
  func sessions() async throws -> [Side: [Metric: Double]] {
    let result = try await Sessions().run { print($0) }
    var metrics: [Metric: Double] = [:]
    for (client, readings) in result {
      let values: [SessionsReading: Double] = [
        .residentSettled: Double(readings.settled.resident) / 1024, .residentEnd: Double(readings.end.resident) / 1024,
        .residentGrowth: Double(readings.end.resident - readings.settled.resident) / 1024,
        .threadsAdded: Double(readings.end.threads - readings.settled.threads),
        .descriptorsAdded: Double(readings.end.descriptors - readings.settled.descriptors),
        .failed: Double(readings.failed),
      ]
      for (reading, value) in values { metrics[.sessions(client, reading)] = value }
    }
    return [.revue: metrics]
  }

  /// What the sessions scenario reports of each kind of client.
  enum SessionsReading: Sendable, Hashable {
    /// The node's resident memory after the settled sessions and after the last, and its
    /// growth between them, MiB.
    case residentSettled, residentEnd, residentGrowth
    /// Threads and file descriptors added between them.
    case threadsAdded, descriptorsAdded
    /// Sessions whose client failed.
    case failed
  }
}

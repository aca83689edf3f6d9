import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  /// The RTSP server stopped while its clients play, over TCP and UDP, and after refusing
  /// clients: no GLib critical, and `stop()` returns. gst-rtsp-server's client threads closed a
  /// connection from one thread while another read it, which once spun a core for minutes
  /// (29.5 million criticals); the connections are now served and closed on the server's thread.
  @Suite(.tier(.pipeline), .serialized, .timeLimit(.minutes(1))) struct RTSPServerTests {
    init() {
      TestEnvironment.prepare()
      GLibCriticals.startCounting()
    }

    /// A stream that runs until stopped.
    static let launch =
      "( videotestsrc is-live=true ! video/x-raw,width=160,height=120,framerate=30/1 ! vp8enc deadline=1 ! rtpvp8pay name=pay0 )"

    /// A client of `url` over `protocol`, playing into an appsink.
    static func client(_ url: String, over transport: String) throws -> (Pipeline, AppSink) {
      let pipeline = try Pipeline(
        parsing: "rtspsrc location=\(url) protocols=\(transport) latency=0 ! appsink name=sink sync=false")
      let sink = try pipeline.element(named: "sink", as: AppSink.self)
      try pipeline.play()
      return (pipeline, sink)
    }

    @Test func stoppingWhileClientsPlayLogsNoCritical() throws {
      let before = GLibCriticals.count
      for _ in 0..<4 {
        let server = try RTSPServer(address: "127.0.0.1", port: 0)
        server.mount("/test", launch: Self.launch)
        let url = "rtsp://127.0.0.1:\(server.port)/test"
        let clients = try ["tcp", "udp", "tcp"].map { try Self.client(url, over: $0) }
        for (_, sink) in clients { #expect(sink.pullSample(timeout: .seconds(10)) != nil, "a client played") }
        server.stop()
        for (pipeline, _) in clients { pipeline.stop() }
      }
      #expect(Self.serverCriticals(after: before).isEmpty, "GLib criticals while stopping")
    }

    /// The criticals logged after the first `before`, but those of the test's clients:
    /// `rtspsrc` (GStreamer 1.22) ends its stream with the seqnum of a seek it never made when
    /// the server closes the connection under it, which GStreamer refuses ("gst_event_set_seqnum:
    /// assertion 'seqnum != GST_SEQNUM_INVALID' failed"; in CI, 2 in one run of the stop test and 1
    /// in another of the refusal test).
    static func serverCriticals(after before: Int) -> [String] {
      GLibCriticals.messages(after: before).filter { !$0.contains("gst_event_set_seqnum") }
    }

    /// Clients still in their RTSP exchange when the server stops.
    @Test func stoppingWhileClientsConnectLogsNoCritical() throws {
      let before = GLibCriticals.count
      for round in 0..<30 {
        let server = try RTSPServer(address: "127.0.0.1", port: 0)
        server.mount("/test", launch: Self.launch)
        let url = "rtsp://127.0.0.1:\(server.port)/test"
        let clients = try (0..<6).map { try Self.client(url, over: $0 % 2 == 0 ? "tcp" : "udp") }
        if round % 2 == 1 { _ = clients[0].1.pullSample(timeout: .seconds(10)) }
        server.stop()
        for (pipeline, _) in clients { pipeline.stop() }
      }
      #expect(Self.serverCriticals(after: before).isEmpty, "GLib criticals while stopping")
    }

    @Test func refusedClientsLogNoCritical() throws {
      let before = GLibCriticals.count
      let server = try RTSPServer(
        address: "127.0.0.1", port: 0, credentials: [.init(user: "ann", password: "right")], authentication: .digest)
      server.mount("/test", launch: Self.launch)
      for _ in 0..<10 {
        let (pipeline, sink) = try Self.client("rtsp://ann:wrong@127.0.0.1:\(server.port)/test", over: "tcp")
        let error = try #require(pipeline.bus.pop(.error, timeout: .seconds(10)), "refused")
        #expect("\(error)".contains("Unauthorized") || "\(error)".contains("authent"), "\(error)")
        #expect(sink.pullSample(timeout: .zero) == nil)
        pipeline.stop()
      }
      let (pipeline, sink) = try Self.client("rtsp://ann:right@127.0.0.1:\(server.port)/test", over: "tcp")
      #expect(sink.pullSample(timeout: .seconds(10)) != nil, "the right password plays")
      server.stop()
      pipeline.stop()
      #expect(Self.serverCriticals(after: before).isEmpty, "GLib criticals while refusing")
    }
  }
}

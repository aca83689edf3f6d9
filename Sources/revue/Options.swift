import RevueCommandLine

/// A parsed `revue` command line.
enum Command: Equatable, ProgramCommand {
  static let programName = "revue"

  /// `revue check [--json]`: GStreamer's version, the elements the node uses, and a test pipeline.
  case check(json: Bool)
  /// `revue bench [SCENARIO ...] [--frames N] [--runs N] [--minutes N] [--json FILE] [--markdown FILE]`: measured
  /// against gst-launch; `frames` nil gives each scenario its own default, `minutes` nil the soak's 10.
  case bench(scenarios: [String], frames: Int?, runs: Int, json: String?, markdown: String? = nil, minutes: Int? = nil)
  /// `revue bench --child KIND KEY=VALUE …` (not in the help): the Revue side of a bench scenario,
  /// run by `revue bench` in a process of its own.
  case benchChild([String])
  /// `revue devices [--json]`: cameras and microphones with their formats.
  case devices(json: Bool)
  /// `revue stream …`: a camera published over RTP.
  case stream(StreamOptions)
  /// `revue receive …`: a stream decoded.
  case receive(ReceiveOptions)
  /// `revue serve --rtsp …`: a camera served to RTSP clients.
  case serve(ServeOptions)
  /// `revue demo [--duration S]`: a sender and a receiver in one process.
  case demo(duration: Int)
  /// `revue link --to HOST:PORT …`: a relay through an emulated bad link.
  case link(LinkOptions)
  /// `revue run FILE.pipeline …`: a pipeline config.
  case run(RunCommand)
  /// `revue help` or `--help`.
  case help

  /// The help text.
  static let usage = """
    usage: revue <command> [options]

    commands:
      check [--json]   report GStreamer's version and the plugins the node uses, present or missing,
                       and run a test pipeline (test pattern, VP8 encode and decode)
      bench [SCENARIO ...] [--frames N] [--runs N] [--minutes N] [--json FILE] [--markdown FILE]
                       measure the SDK against the same GStreamer elements run by gst-launch-1.0
                       (build with -c release; all scenarios but soak take about 7 minutes); scenarios:
                       capture-nv12 capture-bgra capture-rotate90 publish-nv12 publish-bgra
                       send-vp8-720p send-h264-720p send-vp8-480p send-h264-480p
                       send-vp8-720p-mjpeg send-h264-720p-mjpeg
                       receive-vp8-720p receive-h264-720p receive-vp8-480p receive-h264-480p
                       latency-vp8-720p latency-h264-720p startup-vp8-720p startup-h264-720p
                       scale-vp8-480p render-1080p (a VideoView window; on an Xvfb of its own with
                       no display)
                       soak (run only when named: revue stream and revue receive of 720p VP8
                       beside gst-launch's pair, memory, threads and file descriptors after a
                       30 s warm-up)
                       links (run only when named, and alone: loss 0, 5% and 10% both ways at 30 ± 10 ms
                       × VP8, H.264 × 640x480, 1280x720 × recovery nack, off (and FEC at 640x480),
                       then a 5 s outage; frames intact and longest freeze judged against a lossless
                       reference receiver; about 6 minutes; --markdown writes docs/loss-recovery.md)
                       --frames N: frames per run (default: 300 capture, 90 send/receive, 240 latency,
                       300 each links trial)
                       --minutes N: how long the soak runs (default: 10)
      devices [--json] list the cameras and microphones with their formats (set
                       REVUE_VIRTUAL_CAMERAS=all to add the virtual cameras)
      stream [--camera ID|--virtual-camera PROFILE|--test-pattern|--screen] [--size WxH] [--fps N]
             [--codec vp8|h264] [--bitrate BPS] [--fixed-bitrate] [--audio] [--simulcast]
             [--to HOST:PORT] [--sdp FILE] [--no-recovery] [--fec] [--srtp | --srtp-key-file F]
             [--srtp-suite NAME] [--whip URL [--token-file F]] [--duration S] [--json]
                       send a camera over RTP (default: the first camera, or the virtual one,
                       1280x720, 30 fps, VP8, to 127.0.0.1:5004), or the X11 screen of DISPLAY
                       (--screen: scaled to 1280x720, 15 fps); --audio adds the microphone
                       (Opus; with --test-pattern the sync signal: a white flash and a 1 kHz
                       beep at the same instant once a second), --simulcast smaller layers on
                       the next port pairs; lost packets are sent again when the receiver
                       asks (NACK, RTX): --no-recovery sends as plain RTP tools do, --fec adds
                       ULPFEC (20% more); the bitrate (--bitrate, the most) follows the path
                       from the receiver's reports, shown as the target, unless --fixed-bitrate;
                       --srtp encrypts (SRTP, SRTCP) with a new key printed once, --srtp-key-file
                       with yours (30 bytes of key‖salt in base64, or 28 with --srtp-suite
                       aes-128-gcm); the SDP then holds the key (written 0600); --whip publishes
                       over WebRTC to a WHIP endpoint (whip+https://HOST/PATH, any SFU;
                       --token-file its bearer token) instead of RTP; Ctrl-C stops
      receive [--port N | --sdp FILE] [--codec vp8|h264] [--latency MS] [--no-recovery]
              [--srtp-key-file F] [--srtp-suite NAME] [--from HOST]
              [--duration S] [--frames N] [--snapshot FILE.png] [--window] [--json]
                       decode a stream and show its statistics (with --sdp and the sync
                       signal, the A/V skew: avSyncMilliseconds); --window shows the picture
                       in a 1280x720 window (with no display it says so and goes on); a
                       missing packet is asked for again and waited for --latency MS (default
                       300), or not with --no-recovery; --srtp-key-file decrypts SRTP (with
                       --sdp the key comes from its a=crypto lines); --from HOST takes packets
                       from that host only
      serve --rtsp [ADDRESS:]PORT [--path /PATH] [--user NAME --password-file F] [--auth digest|basic]
            [--no-auth]
            [--camera ID|--virtual-camera PROFILE|--test-pattern] [--size WxH] [--fps N]
            [--codec h264|vp8] [--bitrate BPS] [--audio [--audio-codec opus|aac]] [--duration S]
            [--json]
                       serve a camera to RTSP clients (VLC, ffmpeg, NVRs) at
                       rtsp://HOST:PORT/camera (default path), over UDP or TCP as each client
                       asks: captured and encoded once (default H.264) for all of them;
                       --audio adds the microphone (or a virtual one; with --test-pattern the
                       sync signal's beeps) as a second stream, Opus at 48 kHz (or AAC-LC,
                       as IP cameras send, with --audio-codec aac), in sync with the video by
                       the RTCP sender reports;
                       --user and its password let only that user in (digest authentication,
                       or basic); on loopback (127.0.0.1) unless an ADDRESS is given, and on
                       another address only with a user, or --no-auth; Ctrl-C stops
      demo [--duration S]
                       a sender and a receiver in one process on loopback, then a summary
      link --to HOST:PORT [--listen PORT] [--pairs N] [--loss PCT] [--delay MS] [--jitter MS]
           [--reorder PCT] [--duplicate PCT] [--rate KBPS] [--queue MS] [--seed N] [--duration S] [--json]
                       relay RTP and RTCP through an emulated bad link: send to 127.0.0.1:PORT (default:
                       a free even port, printed) and N port pairs (default 1) go on to HOST:PORT (a
                       numeric IPv4 address), impaired; what the receiver sends back comes back. The
                       conditions apply both ways; --back-loss, --back-delay, ... --back-queue set the
                       way back alone. --jitter keeps the order unless --reorder; --queue is the buffer
                       at --rate (default 100 ms); the same --seed (default 1) drops the same packets.
                       Ctrl-C or --duration stops; then the packets of each way are counted
      run FILE.pipeline [-D KEY=VALUE ...] [--duration S]
                       check and run a gst-launch-style pipeline config (see pipelines/)
      help             show this text

    secrets: --srtp-key-file F, --token-file F and --password-file F read the key, token or
    password from a file (its content, without the trailing newline), or set REVUE_SRTP_KEY,
    REVUE_WHIP_TOKEN or REVUE_RTSP_PASSWORD: every local user can read a command line, so keep
    --srtp-key, --token and --password for tests (an option wins over its file, a file over the
    variable)
    """

  /// Parses the arguments after the program name.
  /// - Throws: ``UsageError`` naming the unknown command or option.
  static func parse(_ arguments: [String]) throws(UsageError) -> Command {
    guard let name = arguments.first else { return .check(json: false) }
    let options = Array(arguments.dropFirst())
    switch name {
    case "help", "--help", "-h":
      return .help
    case "check":
      var json = false
      for option in options {
        switch option {
        case "--json": json = true
        case "--help", "-h": return .help
        default: throw UsageError(description: "check: unknown option '\(option)'")
        }
      }
      return .check(json: json)
    case "bench":
      return try parseBench(options)
    case "stream":
      guard let options = try StreamOptions.parse(options) else { return .help }
      return .stream(options)
    case "receive":
      guard let options = try ReceiveOptions.parse(options) else { return .help }
      return .receive(options)
    case "serve":
      guard let options = try ServeOptions.parse(options) else { return .help }
      return .serve(options)
    case "demo":
      var reader = OptionReader(command: "demo", options)
      var duration = 5
      while let option = reader.next() {
        switch option {
        case "--duration": duration = try reader.count(option)
        case "--help", "-h": return .help
        default: throw reader.unknown(option)
        }
      }
      return .demo(duration: duration)
    case "link":
      guard let options = try LinkOptions.parse(options) else { return .help }
      return .link(options)
    case "run":
      guard let command = try RunCommand.parse(options) else { return .help }
      return .run(command)
    case "devices":
      var json = false
      for option in options {
        switch option {
        case "--json": json = true
        case "--help", "-h": return .help
        default: throw UsageError(description: "devices: unknown option '\(option)'")
        }
      }
      return .devices(json: json)
    default:
      throw UsageError(description: "unknown command '\(name)'")
    }
  }

  private static func parseBench(_ options: [String]) throws(UsageError) -> Command {
    if options.first == "--child" { return .benchChild(Array(options.dropFirst())) }
    var scenarios: [String] = []
    var frames: Int?
    var runs = 3
    var json: String?
    var markdown: String?
    var minutes: Int?
    var index = 0
    func value(_ option: String) throws(UsageError) -> String {
      index += 1
      guard index < options.count else { throw UsageError(description: "bench: \(option) needs a value") }
      return options[index]
    }
    func count(_ option: String) throws(UsageError) -> Int {
      let text = try value(option)
      guard let number = Int(text), number > 0 else {
        throw UsageError(description: "bench: \(option) takes a whole number above 0, not '\(text)'")
      }
      return number
    }
    while index < options.count {
      let option = options[index]
      switch option {
      case "--frames": frames = try count(option)
      case "--runs": runs = try count(option)
      case "--minutes": minutes = try count(option)
      case "--json": json = try value(option)
      case "--markdown": markdown = try value(option)
      case "--help", "-h": return .help
      default:
        guard BenchCommand.Scenario(rawValue: option) != nil else {
          let known = BenchCommand.Scenario.allCases.map(\.rawValue).joined(separator: ", ")
          throw UsageError(description: "bench: unknown scenario '\(option)' (known: \(known))")
        }
        scenarios.append(option)
      }
      index += 1
    }
    if scenarios.contains("links") && scenarios.count > 1 {
      throw UsageError(description: "bench: links runs alone (its report is not an A/B table)")
    }
    return .bench(scenarios: scenarios, frames: frames, runs: runs, json: json, markdown: markdown, minutes: minutes)
  }

  /// Runs the command.
  func run() async throws {
    switch self {
    case .help: print(Command.usage)
    case .check(let json): try await CheckCommand(json: json).run()
    case .devices(let json): try await DevicesCommand(json: json).run()
    case .stream(let options): try await StreamCommand(options: options).run()
    case .receive(let options): try await ReceiveCommand(options: options).run()
    case .serve(let options): try await ServeCommand(options: options).run()
    case .demo(let duration): try await DemoCommand(duration: duration).run()
    case .run(let command): try await command.run()
    case .link(let options): try await LinkCommand(options: options).run()
    case .benchChild(let arguments): try await BenchChild(arguments: arguments).run()
    case .bench(let scenarios, let frames, let runs, let json, let markdown, let minutes):
      try await BenchCommand(
        scenarios: scenarios.compactMap(BenchCommand.Scenario.init(rawValue:)), frames: frames, runs: runs,
        jsonPath: json, markdownPath: markdown, minutes: minutes
      ).run()
    }
  }
}

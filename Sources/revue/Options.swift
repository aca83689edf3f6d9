import RevueCommandLine

/// A parsed `revue` command line.
enum Command: Equatable, ProgramCommand {
  static let programName = "revue"

  /// `revue check [--json]`: GStreamer's version, the elements the node uses, and a test pipeline.
  case check(json: Bool)
  /// `revue devices [--json]`: cameras and microphones with their formats.
  case devices(json: Bool)
  /// `revue stream …`: a camera published over RTP.
  case stream(StreamOptions)
  /// `revue receive …`: a stream decoded.
  case receive(ReceiveOptions)
  /// `revue serve --rtsp …` / `--webrtc …`: a camera served to RTSP clients, WebRTC viewers or both.
  case serve(ServeOptions)
  /// `revue record --dir DIR …`: a camera recorded to segment files.
  case record(RecordOptions)
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
      devices [--json] list the cameras and microphones with their formats (set
                       REVUE_VIRTUAL_CAMERAS=all to add the virtual cameras)
      stream [--camera ID|--virtual-camera PROFILE|--test-pattern|--screen] [--size WxH] [--fps N]
             [--codec vp8|h264] [--bitrate BPS] [--fixed-bitrate] [--audio] [--simulcast]
             [--to HOST:PORT|srt://HOST:PORT|rtmp://HOST/APP/KEY] [--srt-latency MS]
             [--srt-passphrase-file F] [--sdp FILE] [--no-recovery] [--fec] [--srtp | --srtp-key-file F]
             [--srtp-suite NAME] [--whip URL [--token-file F]] [--record DIR [RECORDING OPTIONS]]
             [--duration S] [--json]
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
                       --token-file its bearer token) instead of RTP; --to srt://HOST:PORT
                       calls an SRT listener with MPEG-TS (H.264, AAC), --to rtmp://… publishes
                       FLV to an RTMP server, connecting again when it drops; --record DIR
                       records what is sent over RTP, encoded once (asking for a keyframe about
                       every second), with the options of `record` (--format, --segment, --keep,
                       --keep-size; VP8 goes in mkv); a recording that fails ends alone; Ctrl-C
                       stops
      receive [--port N | --sdp FILE | --whep URL [--token-file F]] [--codec vp8|h264]
              [--latency MS] [--no-recovery] [--srtp-key-file F] [--srtp-suite NAME] [--from HOST]
              [--record DIR [RECORDING OPTIONS]] [--duration S] [--frames N] [--snapshot FILE.png]
              [--window] [--json]
                       decode a stream and show its statistics (with --sdp and the sync
                       signal, the A/V skew: avSyncMilliseconds); --window shows the picture
                       in a 1280x720 window (with no display it says so and goes on); a
                       missing packet is asked for again and waited for --latency MS (default
                       300), or not with --no-recovery; --srtp-key-file decrypts SRTP (with
                       --sdp the key comes from its a=crypto lines); --from HOST takes packets
                       from that host only; --whep plays from a WHEP server over WebRTC
                       (https://HOST/PATH, or http:// on this machine: another node's
                       `serve --webrtc`, MediaMTX, ...; --token-file its bearer token), video
                       and audio, without the RTP options; it ends when the session fails;
                       --record DIR records an RTP stream as it comes, not decoded and
                       encoded again (Matroska; the options of `record`)
      serve --rtsp [ADDRESS:]PORT [--path /PATH] [--user NAME --password-file F] [--auth digest|basic]
            [--webrtc [ADDRESS:]PORT [--token-file F] [--simulcast]] [--srt [ADDRESS:]PORT
            [--srt-latency MS] [--srt-passphrase-file F]] [--no-auth]
            [--camera ID|--virtual-camera PROFILE|--test-pattern] [--size WxH] [--fps N]
            [--codec h264|vp8] [--bitrate BPS] [--audio [--audio-codec opus|aac]]
            [--record DIR [RECORDING OPTIONS]] [--duration S] [--json]
                       serve a camera to RTSP clients (VLC, ffmpeg, NVRs) at
                       rtsp://HOST:PORT/camera (default path), over UDP or TCP as each client
                       asks: captured and encoded once (default H.264) for all of them;
                       --audio adds the microphone (or a virtual one; with --test-pattern the
                       sync signal's beeps) as a second stream, Opus at 48 kHz (or AAC-LC,
                       as IP cameras send, with --audio-codec aac), in sync with the video by
                       the RTCP sender reports;
                       --user and its password let only that user in (digest authentication,
                       or basic); on loopback (127.0.0.1) unless an ADDRESS is given, and on
                       another address only with a user, or --no-auth;
                       --webrtc (alone or beside --rtsp) serves WebRTC viewers: a page to
                       watch on at http://HOST:PORT/camera/ and WHEP at /camera/whep, from one
                       encoder (default VP8); --token (or --token-file, REVUE_WEBRTC_TOKEN)
                       asks viewers for a bearer token (the page reads #token=T); on loopback
                       unless an ADDRESS is given, and on another only with a token, or
                       --no-auth; --simulcast encodes smaller layers too (360p, 180p under
                       720p) and sends each viewer the largest its path carries; --srt serves
                       SRT callers MPEG-TS (H.264), on loopback unless an ADDRESS is given, and
                       on another only with a passphrase, or --no-auth; --record DIR records
                       the camera too (the options of `record`): with --webrtc as encoded for
                       the viewers (one encoder for both), otherwise by an encoder of its own
                       (H.264); Ctrl-C stops
      record --dir DIR [--camera ID|--virtual-camera PROFILE|--test-pattern] [--size WxH] [--fps N]
             [--codec h264|vp8] [--bitrate BPS] [--audio] [--format mp4|mkv] [--segment 60s]
             [--keep 24h] [--keep-size 2GB] [--duration S] [--json]
                       record a camera (and with --audio its microphone) to files in DIR, one
                       per segment (default 60s, each from a keyframe), named by the UTC time
                       of its first frame (2026-12-07T20-05-00Z.mp4): MP4 (H.264, AAC) or
                       Matroska (--format mkv: H.264 or VP8, Opus), written so that after a
                       crash every file plays, the last one to within 1.5 s of it;
                       --keep deletes segments older than that, --keep-size the oldest beyond
                       that size; a write error (a full disk) ends the recording; Ctrl-C stops
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
    REVUE_WHIP_TOKEN (stream --whep), REVUE_WHEP_TOKEN (receive --whep), REVUE_WEBRTC_TOKEN
    (serve --webrtc), REVUE_SRT_PASSPHRASE or REVUE_RTSP_PASSWORD: every local user can read a command line, so keep
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
    case "stream":
      guard let options = try StreamOptions.parse(options) else { return .help }
      return .stream(options)
    case "receive":
      guard let options = try ReceiveOptions.parse(options) else { return .help }
      return .receive(options)
    case "serve":
      guard let options = try ServeOptions.parse(options) else { return .help }
      return .serve(options)
    case "record":
      guard let options = try RecordOptions.parse(options) else { return .help }
      return .record(options)
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

  /// Runs the command.
  func run() async throws {
    switch self {
    case .help: print(Command.usage)
    case .check(let json): try await CheckCommand(json: json).run()
    case .devices(let json): try await DevicesCommand(json: json).run()
    case .stream(let options): try await StreamCommand(options: options).run()
    case .receive(let options): try await ReceiveCommand(options: options).run()
    case .serve(let options): try await ServeCommand(options: options).run()
    case .record(let options): try await RecordCommand(options: options).run()
    case .demo(let duration): try await DemoCommand(duration: duration).run()
    case .run(let command): try await command.run()
    case .link(let options): try await LinkCommand(options: options).run()
    }
  }
}

import Foundation
import RevueCommandLine
import RevueSDK

/// What the node's commands read beside what every program reads.
extension OptionReader {
  /// A codec name after `option`.
  mutating func codec(_ option: String) throws(UsageError) -> VideoCodec {
    let text = try value(option)
    guard let codec = VideoCodec(rawValue: text) else {
      throw error("\(option) is vp8 or h264, not '\(text)'")
    }
    return codec
  }

  /// A picture size after `option`: `WIDTHxHEIGHT`.
  mutating func size(_ option: String) throws(UsageError) -> Dimensions {
    let text = try value(option)
    let parts = text.split(separator: "x").compactMap { Int32($0) }
    guard parts.count == 2, parts[0] > 0, parts[1] > 0 else {
      throw error("\(option) is WIDTHxHEIGHT, such as 1280x720, not '\(text)'")
    }
    return Dimensions(width: parts[0], height: parts[1])
  }

  /// The SRTP key of `--srtp-key` or its file or variable (``Secret``; a `--srtp-suite` given,
  /// or the default suite); the error names where the key came from and says what is wrong
  /// with it, never what it is.
  static func srtpKey(
    _ command: String, key: (value: String, source: String)?, suite: String?
  ) throws(UsageError) -> SRTPKey? {
    var chosen = SRTPKey.Suite.aesCM128HMACSHA1_80
    if let suite {
      guard let named = SRTPKey.Suite(name: suite) else {
        throw UsageError(
          description: "\(command): --srtp-suite is aes-cm-128-hmac-sha1-80 or aes-128-gcm, not '\(suite)'")
      }
      chosen = named
    }
    guard let key else { return nil }
    do {
      return try SRTPKey(base64: key.value, suite: chosen)
    } catch {
      throw UsageError(description: "\(command): \(key.source): \(error.message)")
    }
  }

}

/// A secret option (`--srtp-key`, `--token`, `--password`). On the command line it is readable
/// by every local user (`/proc/PID/cmdline`), so it can also come from a file (`--token-file
/// F`: its content, the trailing newline trimmed) or from an environment variable
/// (`REVUE_WHIP_TOKEN`), which only its owner reads: the option wins over the file, the file over
/// the variable, and the option with its file is a usage error.
struct Secret {
  /// The option, such as `--token`; its file's is the same followed by `-file`.
  let option: String
  /// The environment variable, such as `REVUE_WHIP_TOKEN`.
  let variable: String
  /// What the option gave.
  var value: String?
  /// The file the `-file` option named.
  var file: String?

  /// The option that names a file of the secret.
  var fileOption: String { option + "-file" }

  /// The largest file read: a secret is a line, and `/dev/zero` never ends.
  static let largestFile = 65_536

  /// Takes `option` (the secret's option or its file's) and its value from `reader`; false
  /// when `option` is neither.
  mutating func take(_ option: String, from reader: inout OptionReader) throws(UsageError) -> Bool {
    switch option {
    case self.option: value = try reader.value(option)
    case fileOption: file = try reader.value(option)
    default: return false
    }
    return true
  }

  /// The secret and where it came from (the option, its file's option, or the variable), or nil
  /// when none of them gives one; the variable is read from `environment` (empty is unset).
  /// - Throws: ``UsageError`` when both the option and its file are given, or the file cannot be
  ///   read, is empty or is not UTF-8 text; it names the file, never what it holds.
  func resolve(_ command: String, environment: [String: String]) throws(UsageError) -> (value: String, source: String)?
  {
    if value != nil && file != nil {
      throw UsageError(description: "\(command): give \(option) or \(fileOption), not both")
    }
    if let value { return (value, option) }
    if let file { return (try Self.read(file, command: "\(command): \(fileOption)"), fileOption) }
    if let text = environment[variable], !text.isEmpty { return (text, variable) }
    return nil
  }

  /// The content of `path` without its trailing newline.
  private static func read(_ path: String, command: String) throws(UsageError) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      throw UsageError(description: "\(command): cannot read '\(path)': \(String(cString: strerror(errno)))")
    }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: largestFile + 1)
    var count = 0
    while count < bytes.count {
      let read = bytes[count...].withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if read < 0 && errno == EINTR { continue }
      guard read >= 0 else {
        throw UsageError(description: "\(command): cannot read '\(path)': \(String(cString: strerror(errno)))")
      }
      if read == 0 { break }
      count += read
    }
    guard count <= largestFile else {
      throw UsageError(description: "\(command): '\(path)' is longer than \(largestFile / 1024) KiB: not a secret")
    }
    guard var text = String(validating: bytes[..<count], as: UTF8.self) else {
      throw UsageError(description: "\(command): '\(path)' is not UTF-8 text")
    }
    while text.last == "\n" || text.last == "\r\n" { text.removeLast() }
    guard !text.isEmpty else { throw UsageError(description: "\(command): '\(path)' is empty") }
    return text
  }
}

/// `--srt-latency MS` and `--srt-passphrase` (or `--srt-passphrase-file`, `REVUE_SRT_PASSPHRASE`:
/// ``Secret``), the SRT options of `revue stream --to srt://…` and `revue serve --srt`.
struct SRTArguments {
  /// `--srt-latency`, when given.
  var latency: Int?
  /// The passphrase's option, its file's, and its variable.
  var passphrase = Secret(option: "--srt-passphrase", variable: "REVUE_SRT_PASSPHRASE")

  /// Takes `option` and its value from `reader`; false when it is not an SRT option.
  mutating func take(_ option: String, from reader: inout OptionReader) throws(UsageError) -> Bool {
    if option == "--srt-latency" {
      latency = try reader.count(option)
      return true
    }
    return try passphrase.take(option, from: &reader)
  }

  /// The SRT option given on the command line, if any (for "goes with" errors).
  var given: String? {
    latency != nil
      ? "--srt-latency"
      : passphrase.value != nil
        ? passphrase.option
        : passphrase.file != nil ? passphrase.fileOption : nil
  }

  /// The options, SRT's defaults for what is not given; the passphrase's variable is read from
  /// `environment`.
  /// - Throws: ``UsageError`` for a latency or passphrase SRT does not take (naming where the
  ///   passphrase came from, never what it is), or as ``Secret/resolve(_:environment:)``.
  func options(_ command: String, environment: [String: String]) throws(UsageError) -> StreamOutput.SRTOptions {
    let latency = latency ?? StreamOutput.SRTOptions().latency
    guard (20...8000).contains(latency) else {
      throw UsageError(description: "\(command): --srt-latency is 20 to 8000 milliseconds, not \(latency)")
    }
    let secret = try passphrase.resolve(command, environment: environment)
    if let secret, !(10...79).contains(secret.value.utf8.count) {
      throw UsageError(
        description:
          "\(command): \(secret.source): an SRT passphrase has 10 to 79 characters, not \(secret.value.utf8.count)")
    }
    return StreamOutput.SRTOptions(latency: latency, passphrase: secret?.value)
  }
}

/// `revue stream` options.
struct StreamOptions: Equatable {
  enum Source: Equatable {
    case firstCamera
    case camera(String)
    case virtualCamera(String)
    case testPattern
    /// The X11 screen of `DISPLAY` (`--screen`).
    case screen
  }

  var source = Source.firstCamera
  var size = Dimensions.h720_169
  var fps = 30
  var codec = VideoCodec.vp8
  var bitrate: Int?
  var destination = "127.0.0.1:5004"
  /// Where the stream goes over SRT or RTMP instead of RTP (`--to srt://HOST:PORT`,
  /// `--to rtmp://HOST/APP/KEY`), in MPEG-TS or FLV, H.264 and AAC.
  var output: StreamOutput.Destination?
  /// A WHIP endpoint to publish to instead (`--whip`), and its bearer token.
  var whip: URL?
  var token: String?
  var sdpPath: String?
  var duration: Int?
  var json = false
  var audio = false
  var simulcast = false
  /// How lost packets are recovered (`--no-recovery`, `--fec`).
  var recovery = LossRecovery.nack
  /// `--fixed-bitrate`: the encoder keeps its bitrate, whatever the path (no congestion control).
  var fixedBitrate = false
  /// The SRTP key given (`--srtp-key`), nil for plain RTP or a key made at the start.
  var srtpKey: SRTPKey?
  /// Whether to send SRTP with a new key, printed once (`--srtp` without `--srtp-key`).
  var makesSRTPKey = false
  /// The suite of a key made at the start (`--srtp-suite`).
  var srtpSuite = SRTPKey.Suite.aesCM128HMACSHA1_80
  /// `--record DIR` and its options: what is sent, recorded too.
  var recording = RecordingArguments()

  /// Parses `revue stream`'s options; `environment` holds the variables of the secrets
  /// (``Secret``): `REVUE_SRTP_KEY` is as `--srtp-key` (but with `--whip`, which brings its own
  /// encryption), `REVUE_WHIP_TOKEN` as `--token` with `--whip`. Nil for `--help`.
  static func parse(
    _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(UsageError) -> StreamOptions? {
    var options = StreamOptions()
    var reader = OptionReader(command: "stream", arguments)
    var key = Secret(option: "--srtp-key", variable: "REVUE_SRTP_KEY")
    var token = Secret(option: "--token", variable: "REVUE_WHIP_TOKEN")
    var srt = SRTArguments()
    var suite: String?
    var fpsGiven = false
    var codecGiven = false
    var toGiven = false
    while let option = reader.next() {
      switch option {
      case "--camera": options.source = .camera(try reader.value(option))
      case "--virtual-camera": options.source = .virtualCamera(try reader.value(option))
      case "--test-pattern": options.source = .testPattern
      case "--screen": options.source = .screen
      case "--size": options.size = try reader.size(option)
      case "--fps":
        options.fps = try reader.count(option)
        fpsGiven = true
      case "--codec":
        options.codec = try reader.codec(option)
        codecGiven = true
      case "--bitrate": options.bitrate = try reader.count(option)
      case "--to":
        options.destination = try reader.value(option)
        toGiven = true
      case "--whip":
        let text = try reader.value(option)
        guard let url = URL(string: text),
          url.scheme.map({ ["whip+https", "whip+http", "https", "http"].contains($0) }) == true
        else {
          throw UsageError(description: "stream: --whip takes whip+https://HOST/PATH (or whip+http://), not '\(text)'")
        }
        options.whip = url
      case "--sdp": options.sdpPath = try reader.value(option)
      case "--duration": options.duration = try reader.count(option)
      case "--json": options.json = true
      case "--audio": options.audio = true
      case "--simulcast": options.simulcast = true
      case "--no-recovery": options.recovery = []
      case "--fec": options.recovery.insert(.fec)
      case "--fixed-bitrate": options.fixedBitrate = true
      case "--srtp": options.makesSRTPKey = true
      case "--srtp-suite": suite = try reader.value(option)
      case "--help", "-h": return nil
      default:
        if try key.take(option, from: &reader) { continue }
        if try srt.take(option, from: &reader) { continue }
        if try options.recording.take(option, from: &reader) { continue }
        guard try token.take(option, from: &reader) else { throw reader.unknown(option) }
      }
    }
    try options.recording.validate("stream")
    options.output = try Self.output(options.destination, srt: srt, environment: environment)
    if let output = options.output {
      // MPEG-TS and FLV carry H.264 and AAC, one picture size, over their own connection.
      let conflicting = [
        ("--whip", options.whip != nil), ("--sdp", options.sdpPath != nil),
        ("--srtp", options.makesSRTPKey || suite != nil || key.value != nil || key.file != nil),
        ("--simulcast", options.simulcast), ("--no-recovery", options.recovery != .nack),
        ("--fec", options.recovery.contains(.fec)), ("--codec vp8", options.codec == .vp8 && codecGiven),
        ("--token", token.value != nil || token.file != nil),
        ("--fixed-bitrate", options.fixedBitrate), ("--screen", options.source == .screen),
        ("--record", options.recording.directory != nil),
      ].filter(\.1).map(\.0)
      if let first = conflicting.first {
        throw UsageError(description: "stream: --to \(output) goes without \(first)")
      }
      options.codec = .h264
      return options
    }
    if options.whip != nil && options.recording.directory != nil {
      throw UsageError(description: "stream: --record goes without --whip")
    }
    // A screen share's default rate is VideoSDK's default profile's (h720p_15fps).
    if options.source == .screen && !fpsGiven { options.fps = ScreenShareCaptureOptions().fps }
    let whip = options.whip != nil
    let given = try key.resolve("stream", environment: whip ? [:] : environment)
    options.token = try token.resolve("stream", environment: whip ? environment : [:])?.value
    options.srtpKey = try OptionReader.srtpKey("stream", key: given, suite: suite)
    if let suite { options.srtpSuite = SRTPKey.Suite(name: suite) ?? options.srtpSuite }
    if options.srtpKey != nil { options.makesSRTPKey = false }
    if suite != nil, given == nil, !options.makesSRTPKey {
      throw UsageError(description: "stream: --srtp-suite goes with --srtp or --srtp-key")
    }
    if options.whip != nil {
      // WebRTC brings its own encryption (DTLS-SRTP), loss recovery and addressing.
      let conflicting = [
        ("--to", toGiven), ("--sdp", options.sdpPath != nil), ("--srtp", options.makesSRTPKey || given != nil),
        ("--simulcast", options.simulcast), ("--no-recovery", options.recovery != .nack),
        ("--fec", options.recovery.contains(.fec)), ("--screen", options.source == .screen),
      ].filter(\.1).map(\.0)
      if let first = conflicting.first { throw UsageError(description: "stream: --whip goes without \(first)") }
    } else if options.token != nil {
      throw UsageError(description: "stream: --token goes with --whip")
    }
    return options
  }

  /// The SRT or RTMP destination `--to` names (`srt://HOST:PORT`, `rtmp://HOST/APP/KEY`), with
  /// the SRT options; nil for an RTP `HOST:PORT`.
  /// - Throws: ``UsageError`` for a URL that is not one of those, and for SRT options without
  ///   an SRT destination.
  static func output(
    _ destination: String, srt: SRTArguments, environment: [String: String]
  ) throws(UsageError) -> StreamOutput.Destination? {
    let scheme = destination.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() } ?? ""
    guard destination.contains("://") else {
      if let given = srt.given { throw UsageError(description: "stream: \(given) goes with --to srt://HOST:PORT") }
      return nil
    }
    let components = URLComponents(string: destination)
    switch scheme {
    case "srt":
      guard let host = components?.host, !host.isEmpty, let port = components?.port, (1...65535).contains(port),
        components?.path.isEmpty == true, components?.query == nil
      else {
        throw UsageError(
          description: "stream: --to takes srt://HOST:PORT (the options as --srt-…), not '\(destination)'")
      }
      return .srt(host: host, port: port, mode: .caller, options: try srt.options("stream", environment: environment))
    case "rtmp", "rtmps":
      guard let url = URL(string: destination), url.host?.isEmpty == false,
        url.pathComponents.filter({ $0 != "/" }).count >= 2
      else {
        throw UsageError(description: "stream: --to takes rtmp://HOST[:PORT]/APP/KEY, not '\(destination)'")
      }
      if let given = srt.given { throw UsageError(description: "stream: \(given) goes with --to srt://HOST:PORT") }
      return .rtmp(url)
    default:
      throw UsageError(
        description: "stream: --to takes HOST:PORT (RTP), srt://HOST:PORT or rtmp://HOST/APP/KEY, not '\(destination)'")
    }
  }
}

/// `revue receive` options.
struct ReceiveOptions: Equatable {
  var port = 5004
  var sdpPath: String?
  var codec: VideoCodec?
  var duration: Int?
  var frames: Int?
  var snapshotPath: String?
  /// `--window`: shows the stream in a window (``VideoView``).
  var window = false
  var json = false
  /// How long a missing packet is waited for, in milliseconds.
  var latency = Room.defaultLatency
  /// Whether lost packets are asked for again (`--no-recovery`).
  var recovery = LossRecovery([.nack, .fec])
  /// The SRTP key of the stream on `--port` (`--srtp-key`); with `--sdp` the key comes from
  /// its `a=crypto` lines.
  var srtpKey: SRTPKey?
  /// The one host packets are taken from (`--from`); nil for any.
  var source: String?
  /// A WHEP server to play from instead (`--whep`), and its bearer token.
  var whep: URL?
  var token: String?
  /// `--record DIR` and its options: the stream recorded as it comes.
  var recording = RecordingArguments()

  /// Parses `revue receive`'s options; `environment` holds `REVUE_SRTP_KEY` (``Secret``), as
  /// `--srtp-key` but with `--sdp`, whose `a=crypto` lines hold the key, or with `--whep`; and
  /// `REVUE_WHEP_TOKEN`, as `--token` with `--whep`. Nil for `--help`.
  static func parse(
    _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(UsageError) -> ReceiveOptions? {
    var options = ReceiveOptions()
    var reader = OptionReader(command: "receive", arguments)
    var key = Secret(option: "--srtp-key", variable: "REVUE_SRTP_KEY")
    var token = Secret(option: "--token", variable: "REVUE_WHEP_TOKEN")
    var suite: String?
    // The options that say how RTP is received, which WebRTC says for itself.
    var rtpOptions: [String] = []
    while let option = reader.next() {
      switch option {
      case "--port": options.port = try reader.count(option)
      case "--sdp": options.sdpPath = try reader.value(option)
      case "--codec": options.codec = try reader.codec(option)
      case "--duration": options.duration = try reader.count(option)
      case "--frames": options.frames = try reader.count(option)
      case "--snapshot": options.snapshotPath = try reader.value(option)
      case "--window": options.window = true
      case "--latency": options.latency = try reader.count(option)
      case "--no-recovery": options.recovery = []
      case "--json": options.json = true
      case "--srtp-suite": suite = try reader.value(option)
      case "--from": options.source = try reader.value(option)
      case "--whep":
        let text = try reader.value(option)
        guard let url = URL(string: text),
          url.scheme.map({ ["whep+https", "whep+http", "https", "http"].contains($0) }) == true, url.host != nil
        else {
          throw UsageError(description: "receive: --whep takes https://HOST/PATH (or http://), not '\(text)'")
        }
        options.whep = url
        continue
      case "--help", "-h": return nil
      default:
        if try token.take(option, from: &reader) { continue }
        if try key.take(option, from: &reader) { continue }
        // A recording takes the stream as it comes, over RTP or WebRTC alike.
        if try options.recording.take(option, from: &reader) { continue }
        throw reader.unknown(option)
      }
      if !["--duration", "--frames", "--snapshot", "--window", "--json"].contains(option) { rtpOptions.append(option) }
    }
    try options.recording.validate("receive")
    let whep = options.whep != nil
    let given = try key.resolve("receive", environment: options.sdpPath == nil && !whep ? environment : [:])
    options.token = try token.resolve("receive", environment: whep ? environment : [:])?.value
    if whep {
      // WebRTC brings its own ports, codecs, loss recovery and encryption (DTLS-SRTP).
      if let first = rtpOptions.first ?? given?.source {
        throw UsageError(description: "receive: --whep goes without \(first)")
      }
      return options
    }
    if options.token != nil { throw UsageError(description: "receive: --token goes with --whep") }
    options.srtpKey = try OptionReader.srtpKey("receive", key: given, suite: suite)
    if suite != nil, given == nil { throw UsageError(description: "receive: --srtp-suite goes with --srtp-key") }
    if let given, options.sdpPath != nil {
      throw UsageError(
        description: "receive: with --sdp the key comes from the SDP's a=crypto lines: leave out \(given.source)")
    }
    return options
  }
}

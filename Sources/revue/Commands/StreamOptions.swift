import Foundation
import RevueSDK

/// Reads `--option value` pairs of one subcommand, with errors that name the subcommand.
struct OptionReader {
  let command: String
  private let options: [String]
  private var index = 0

  init(command: String, _ options: [String]) {
    self.command = command
    self.options = options
  }

  /// The next option, or nil at the end.
  mutating func next() -> String? {
    guard index < options.count else { return nil }
    defer { index += 1 }
    return options[index]
  }

  /// The value after `option`.
  mutating func value(_ option: String) throws(UsageError) -> String {
    guard let value = next() else { throw UsageError(description: "\(command): \(option) needs a value") }
    return value
  }

  /// A whole number above 0 after `option`.
  mutating func count(_ option: String) throws(UsageError) -> Int {
    let text = try value(option)
    guard let number = Int(text), number > 0 else {
      throw UsageError(description: "\(command): \(option) takes a whole number above 0, not '\(text)'")
    }
    return number
  }

  /// A codec name after `option`.
  mutating func codec(_ option: String) throws(UsageError) -> VideoCodec {
    let text = try value(option)
    guard let codec = VideoCodec(rawValue: text) else {
      throw UsageError(description: "\(command): \(option) is vp8 or h264, not '\(text)'")
    }
    return codec
  }

  /// The SRTP key of `--srtp-key` (a `--srtp-suite` given, or the default suite); the error
  /// says what is wrong with it, never what it is.
  static func srtpKey(_ command: String, key: String?, suite: String?) throws(UsageError) -> SRTPKey? {
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
      return try SRTPKey(base64: key, suite: chosen)
    } catch {
      throw UsageError(description: "\(command): --srtp-key: \(error.message)")
    }
  }

  func unknown(_ option: String) -> UsageError { UsageError(description: "\(command): unknown option '\(option)'") }
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

  static func parse(_ arguments: [String]) throws(UsageError) -> StreamOptions? {
    var options = StreamOptions()
    var reader = OptionReader(command: "stream", arguments)
    var key: String?
    var suite: String?
    var fpsGiven = false
    var toGiven = false
    while let option = reader.next() {
      switch option {
      case "--camera": options.source = .camera(try reader.value(option))
      case "--virtual-camera": options.source = .virtualCamera(try reader.value(option))
      case "--test-pattern": options.source = .testPattern
      case "--screen": options.source = .screen
      case "--size":
        let text = try reader.value(option)
        let parts = text.split(separator: "x").compactMap { Int32($0) }
        guard parts.count == 2, parts[0] > 0, parts[1] > 0 else {
          throw UsageError(description: "stream: --size is WIDTHxHEIGHT, such as 1280x720, not '\(text)'")
        }
        options.size = Dimensions(width: parts[0], height: parts[1])
      case "--fps":
        options.fps = try reader.count(option)
        fpsGiven = true
      case "--codec": options.codec = try reader.codec(option)
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
      case "--token": options.token = try reader.value(option)
      case "--sdp": options.sdpPath = try reader.value(option)
      case "--duration": options.duration = try reader.count(option)
      case "--json": options.json = true
      case "--audio": options.audio = true
      case "--simulcast": options.simulcast = true
      case "--no-recovery": options.recovery = []
      case "--fec": options.recovery.insert(.fec)
      case "--fixed-bitrate": options.fixedBitrate = true
      case "--srtp": options.makesSRTPKey = true
      case "--srtp-key": key = try reader.value(option)
      case "--srtp-suite": suite = try reader.value(option)
      case "--help", "-h": return nil
      default: throw reader.unknown(option)
      }
    }
    // A screen share's default rate is VideoSDK's default profile's (h720p_15fps).
    if options.source == .screen && !fpsGiven { options.fps = ScreenShareCaptureOptions().fps }
    options.srtpKey = try OptionReader.srtpKey("stream", key: key, suite: suite)
    if let suite { options.srtpSuite = SRTPKey.Suite(name: suite) ?? options.srtpSuite }
    if options.srtpKey != nil { options.makesSRTPKey = false }
    if suite != nil, key == nil, !options.makesSRTPKey {
      throw UsageError(description: "stream: --srtp-suite goes with --srtp or --srtp-key")
    }
    if options.whip != nil {
      // WebRTC brings its own encryption (DTLS-SRTP), loss recovery and addressing.
      let conflicting = [
        ("--to", toGiven), ("--sdp", options.sdpPath != nil), ("--srtp", options.makesSRTPKey || key != nil),
        ("--simulcast", options.simulcast), ("--no-recovery", options.recovery != .nack),
        ("--fec", options.recovery.contains(.fec)), ("--screen", options.source == .screen),
      ].filter(\.1).map(\.0)
      if let first = conflicting.first { throw UsageError(description: "stream: --whip goes without \(first)") }
    } else if options.token != nil {
      throw UsageError(description: "stream: --token goes with --whip")
    }
    return options
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

  static func parse(_ arguments: [String]) throws(UsageError) -> ReceiveOptions? {
    var options = ReceiveOptions()
    var reader = OptionReader(command: "receive", arguments)
    var key: String?
    var suite: String?
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
      case "--srtp-key": key = try reader.value(option)
      case "--srtp-suite": suite = try reader.value(option)
      case "--from": options.source = try reader.value(option)
      case "--help", "-h": return nil
      default: throw reader.unknown(option)
      }
    }
    options.srtpKey = try OptionReader.srtpKey("receive", key: key, suite: suite)
    if suite != nil, key == nil { throw UsageError(description: "receive: --srtp-suite goes with --srtp-key") }
    if options.srtpKey != nil, options.sdpPath != nil {
      throw UsageError(
        description: "receive: with --sdp the key comes from the SDP's a=crypto lines: leave out --srtp-key")
    }
    return options
  }
}

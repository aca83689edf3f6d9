import Foundation
import RevueCommandLine
import RevueSDK

/// `revue serve` options.
struct ServeOptions: Equatable {
  var source = StreamOptions.Source.firstCamera
  var size = Dimensions.h720_169
  var fps = 30
  /// `--codec`; nil: H.264 for RTSP, VP8 for WebRTC (what each side's clients all take).
  var codec: VideoCodec?
  var bitrate: Int?
  /// `--rtsp [ADDRESS:]PORT`: loopback unless an address is given (a camera is not shared with
  /// the network by default); nil without `--rtsp`.
  var rtsp: Listen?
  /// `--webrtc [ADDRESS:]PORT`: WebRTC viewers (WHEP and the page to watch on), loopback unless
  /// an address is given; nil without it.
  var webrtc: Listen?
  /// `--srt [ADDRESS:]PORT`: SRT callers (ffmpeg, OBS, `srtsrc`) served MPEG-TS, loopback
  /// unless an address is given; nil without it.
  var srt: Listen?
  /// `--srt-latency` and `--srt-passphrase` (or its file, `REVUE_SRT_PASSPHRASE`).
  var srtOptions = StreamOutput.SRTOptions()
  /// `--simulcast`: WebRTC viewers are each sent the layer their path carries (360p and 180p
  /// encoded beside a 720p camera).
  var simulcast = false
  /// `--token` (or `--token-file`, `REVUE_WEBRTC_TOKEN`): the bearer token WebRTC viewers give.
  var token: String?
  var path = "/camera"
  var user: String?
  var password: String?
  var authentication = RTSPBroadcast.Authentication.digest
  /// Serving beyond loopback without a password, on purpose.
  var noAuth = false
  var duration: Int?
  var json = false
  /// `--record DIR` and its options: the camera recorded too (as encoded for WebRTC viewers
  /// with `--webrtc`, by an encoder of its own otherwise).
  var recording = RecordingArguments()
  /// `--audio`: the microphone served beside the camera (the sync signal's beeps with
  /// `--test-pattern`), in `audioCodec` (`--audio-codec`, Opus by default).
  var audio = false
  var audioCodec = AudioCodec.opus

  /// An address and port to listen on.
  struct Listen: Equatable {
    var address = "127.0.0.1"
    var port: Int

    /// `[ADDRESS:]PORT` (an IPv6 address in brackets) as `option` gives it.
    init(_ text: String, option: String) throws(UsageError) {
      let split = text.lastIndex(of: ":")
      let portText = split.map { String(text[text.index(after: $0)...]) } ?? text
      guard let port = Int(portText), (0...65535).contains(port) else {
        throw UsageError(
          description: "serve: \(option) is [ADDRESS:]PORT, such as 8554 or 127.0.0.1:8554, not '\(text)'")
      }
      self.port = port
      if let split { address = String(text[..<split]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")) }
    }
  }

  /// Parses `revue serve`'s options; `environment` holds `REVUE_RTSP_PASSWORD` (``Secret``),
  /// as `--password` with `--user`. Nil for `--help`.
  static func parse(
    _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(UsageError) -> ServeOptions? {
    var options = ServeOptions()
    var reader = OptionReader(command: "serve", arguments)
    var password = Secret(option: "--password", variable: "REVUE_RTSP_PASSWORD")
    var token = Secret(option: "--token", variable: "REVUE_WEBRTC_TOKEN")
    var srt = SRTArguments()
    while let option = reader.next() {
      switch option {
      case "--rtsp": options.rtsp = try Listen(try reader.value(option), option: option)
      case "--webrtc": options.webrtc = try Listen(try reader.value(option), option: option)
      case "--srt": options.srt = try Listen(try reader.value(option), option: option)
      case "--simulcast": options.simulcast = true
      case "--path":
        options.path = try reader.value(option)
        guard options.path.hasPrefix("/") else {
          throw UsageError(description: "serve: --path starts with /, such as /camera, not '\(options.path)'")
        }
      case "--user": options.user = try reader.value(option)
      case "--no-auth": options.noAuth = true
      case "--auth":
        switch try reader.value(option) {
        case "basic": options.authentication = .basic
        case "digest": options.authentication = .digest
        case let other: throw UsageError(description: "serve: --auth is basic or digest, not '\(other)'")
        }
      case "--camera": options.source = .camera(try reader.value(option))
      case "--virtual-camera": options.source = .virtualCamera(try reader.value(option))
      case "--test-pattern": options.source = .testPattern
      case "--size": options.size = try reader.size(option)
      case "--fps": options.fps = try reader.count(option)
      case "--codec": options.codec = try reader.codec(option)
      case "--bitrate": options.bitrate = try reader.count(option)
      case "--duration": options.duration = try reader.count(option)
      case "--json": options.json = true
      case "--audio": options.audio = true
      case "--audio-codec":
        let text = try reader.value(option)
        guard let codec = AudioCodec(rawValue: text) else {
          throw UsageError(description: "serve: --audio-codec is opus or aac, not '\(text)'")
        }
        options.audioCodec = codec
      case "--help", "-h": return nil
      default:
        if try password.take(option, from: &reader) { continue }
        if try srt.take(option, from: &reader) { continue }
        if try options.recording.take(option, from: &reader) { continue }
        guard try token.take(option, from: &reader) else { throw reader.unknown(option) }
      }
    }
    try options.recording.validate("serve")
    guard options.rtsp != nil || options.webrtc != nil || options.srt != nil else {
      throw UsageError(
        description:
          "serve: --rtsp [ADDRESS:]PORT, --webrtc [ADDRESS:]PORT or --srt [ADDRESS:]PORT (or more) is required")
    }
    if let listen = options.srt {
      options.srtOptions = try srt.options("serve", environment: environment)
      if options.srtOptions.passphrase == nil, !options.noAuth, !Self.isLoopback(listen.address) {
        throw UsageError(
          description: "serve: --srt \(listen.address) lets anyone on the network watch the camera:"
            + " give --srt-passphrase (or --srt-passphrase-file), or --no-auth to serve it without one on purpose")
      }
    } else if let given = srt.given {
      throw UsageError(description: "serve: \(given) goes with --srt")
    }
    guard options.webrtc != nil || !options.simulcast else {
      throw UsageError(description: "serve: --simulcast goes with --webrtc (RTSP clients take one layer)")
    }
    options.token = try token.resolve("serve", environment: environment)?.value
    if let webrtc = options.webrtc, options.token == nil, !options.noAuth, !Self.isLoopback(webrtc.address) {
      throw UsageError(
        description: "serve: --webrtc \(webrtc.address) lets anyone on the network watch the camera:"
          + " give --token (or --token-file), or --no-auth to serve it without one on purpose")
    }
    guard options.audio || options.audioCodec == .opus else {
      throw UsageError(description: "serve: --audio-codec goes with --audio")
    }
    options.password = try password.resolve("serve", environment: options.user == nil ? [:] : environment)?.value
    guard (options.user == nil) == (options.password == nil) else {
      throw UsageError(description: "serve: --user and --password go together")
    }
    if let rtsp = options.rtsp, options.user == nil, !options.noAuth, !Self.isLoopback(rtsp.address) {
      throw UsageError(
        description: "serve: \(rtsp.address) lets anyone on the network watch the camera:"
          + " give --user and --password, or --no-auth to serve it without them on purpose")
    }
    return options
  }

  /// Whether `address` is this machine's own (127.0.0.0/8, ::1, localhost).
  static func isLoopback(_ address: String) -> Bool {
    address.hasPrefix("127.") || address == "::1" || address == "localhost"
  }
}

/// `revue serve --rtsp`: a camera (or the virtual camera, or a test pattern) served to RTSP
/// clients, encoded once for all of them; with `--audio`, the microphone too, in the same media.
struct ServeCommand {
  var options: ServeOptions

  func run() async throws {
    let device = try await StreamCommand.pickCamera(options.source)
    let (track, capturer, size, encoding) = try await StreamCommand.startCamera(
      device, size: options.size, fps: options.fps, bitrate: options.bitrate)
    var microphone: LocalAudioTrack?
    if options.audio {
      do {
        microphone = try await StreamCommand.startMicrophone(for: options.source)
      } catch {
        try await capturer.stopCapture()
        throw error
      }
    }
    let credentials = options.user.map { [RTSPBroadcast.Credentials(user: $0, password: options.password ?? "")] } ?? []
    let sound =
      microphone.map {
        " with \(($0.capturer as? MicrophoneCapturer)?.device?.name ?? $0.name)"
          + " in \(options.audioCodec == .opus ? "Opus" : "AAC")"
      } ?? ""
    var rtsp: RTSPBroadcast?
    var webrtc: WebRTCBroadcast?
    var srt: StreamOutput?
    var recording: RecordingSession?
    do {
      if let listen = options.rtsp {
        let codec = options.codec ?? .h264
        let broadcast = try RTSPBroadcast(
          track: track, address: listen.address, port: listen.port, path: options.path, codec: codec,
          encoding: encoding, audio: microphone, audioCodec: options.audioCodec,
          credentials: credentials,
          authentication: options.authentication)
        rtsp = broadcast
        let protection = credentials.isEmpty ? "" : ", \(options.authentication) authentication"
        FileHandle.standardError.write(
          Data(
            ("revue: serving \(device.name) \(size) \(codec) at \(encoding.maxBitrate / 1000) kbps\(sound)"
              + " on \(broadcast.url.absoluteString) (UDP and TCP\(protection))\n").utf8))
      }
      if let listen = options.webrtc {
        let codec = options.codec ?? .vp8
        let broadcast = try WebRTCBroadcast(
          track: track, address: listen.address, port: listen.port, path: options.path, codec: codec,
          encoding: encoding, simulcast: options.simulcast, audio: options.audioCodec == .opus ? microphone : nil,
          token: options.token,
          page: WatchPage.template)
        webrtc = broadcast
        FileHandle.standardError.write(
          Data(
            ("revue: serving \(device.name) \(size) \(codec) at \(encoding.maxBitrate / 1000) kbps"
              + "\(options.audioCodec == .opus ? sound : "") to WebRTC viewers: watch on"
              + " \(broadcast.pageURL.absoluteString)\(options.token == nil ? "" : "#token=…")"
              + " (WHEP: \(broadcast.whepURL.absoluteString))\n").utf8))
      }
      if let listen = options.srt {
        // MPEG-TS carries H.264 (whatever --codec says for the others).
        let output = try StreamOutput(
          track: track, audio: microphone,
          to: .srt(host: listen.address, port: listen.port, mode: .listener, options: options.srtOptions),
          encoding: encoding, audioCodec: options.audioCodec)
        srt = output
        FileHandle.standardError.write(
          Data(
            ("revue: serving \(device.name) \(size) h264 at \(encoding.maxBitrate / 1000) kbps\(sound) to SRT callers"
              + " on \(output.destination) (MPEG-TS, latency \(options.srtOptions.latency) ms"
              + (options.srtOptions.passphrase == nil ? "" : ", encrypted") + ")\n").utf8))
      }
      // What WebRTC viewers are sent is recorded as it was encoded for them; an RTSP media is
      // encoded only while clients play, and an SRT listener's pipeline is built anew at each
      // fault: without --webrtc the recording encodes the camera itself.
      if let webrtc {
        recording = try options.recording.record(webrtc, audio: microphone)
      } else {
        recording = try options.recording.record(track, audio: microphone, encoding: encoding)
      }
    } catch {
      await srt?.stop()
      webrtc?.stop()
      rtsp?.stop()
      try await capturer.stopCapture()
      try await microphone?.capturer?.stopCapture()
      throw error
    }
    let printer = StatusPrinter(json: options.json)
    let lastFrames = PreviousCount()
    let (served, viewed, called) = (rtsp, webrtc, srt)
    await RunLoopControl.run(duration: options.duration) {
      let (rtspStats, webrtcStats) = (served?.statistics, viewed?.statistics)
      let framesSent =
        (rtspStats?.framesSent ?? 0) + (webrtcStats?.framesSent ?? 0) + (called?.statistics.framesSent ?? 0)
      let fps = lastFrames.advance(to: framesSent)
      var fields: [(String, Any)] = [("framesSent", framesSent), ("fps", fps)]
      var text = "\(fps) fps  frames \(framesSent)"
      if let rtsp = served, let stats = rtspStats {
        fields += [
          ("url", rtsp.url.absoluteString), ("sessions", stats.sessions), ("encodersStarted", stats.encodersStarted),
        ]
        text += "  RTSP: \(stats.sessions) client(s), encoders started \(stats.encodersStarted)"
      }
      if let webrtc = viewed, let stats = webrtcStats {
        fields += [
          ("whep", webrtc.whepURL.absoluteString), ("viewers", stats.viewers),
          ("viewersConnected", stats.viewersConnected), ("offersRefused", stats.offersRefused),
        ]
        text += "  WebRTC: \(stats.viewers) viewer(s), \(stats.viewersConnected) connected so far"
      }
      printer.print(fields, text: text)
    }
    printer.finish()
    await recording?.finish()
    let final = (rtsp: rtsp?.statistics, webrtc: webrtc?.statistics, srt: srt?.statistics)
    rtsp?.stop()
    webrtc?.stop()
    await srt?.stop()
    try await capturer.stopCapture()
    try await microphone?.capturer?.stopCapture()
    let framesSent = (final.rtsp?.framesSent ?? 0) + (final.webrtc?.framesSent ?? 0) + (final.srt?.framesSent ?? 0)
    let audioSent =
      (final.rtsp?.audioBuffersSent ?? 0) + (final.webrtc?.audioBuffersSent ?? 0) + (final.srt?.audioBuffersSent ?? 0)
    let audio = microphone == nil ? "" : " and \(audioSent) audio buffers"
    let rtspSummary = final.rtsp.map { ", \($0.encodersStarted) encoder(s) started" } ?? ""
    let webrtcSummary = final.webrtc.map { ", \($0.viewersConnected) WebRTC viewer(s)" } ?? ""
    FileHandle.standardError.write(
      Data("revue: served \(framesSent) frames\(audio)\(rtspSummary)\(webrtcSummary)\n".utf8))
  }
}

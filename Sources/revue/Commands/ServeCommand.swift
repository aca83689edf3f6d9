import Foundation
import RevueCommandLine
import RevueSDK

/// `revue serve` options.
struct ServeOptions: Equatable {
  var source = StreamOptions.Source.firstCamera
  var size = Dimensions.h720_169
  var fps = 30
  var codec = VideoCodec.h264
  var bitrate: Int?
  /// Loopback unless an address is given: a camera is not shared with the network by default.
  var address = "127.0.0.1"
  var port = 8554
  var path = "/camera"
  var user: String?
  var password: String?
  var authentication = RTSPBroadcast.Authentication.digest
  /// Serving beyond loopback without a password, on purpose.
  var noAuth = false
  var duration: Int?
  var json = false
  /// `--audio`: the microphone served beside the camera (the sync signal's beeps with
  /// `--test-pattern`), in `audioCodec` (`--audio-codec`, Opus by default).
  var audio = false
  var audioCodec = AudioCodec.opus

  /// Parses `revue serve`'s options; `environment` holds `REVUE_RTSP_PASSWORD` (``Secret``),
  /// as `--password` with `--user`. Nil for `--help`.
  static func parse(
    _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(UsageError) -> ServeOptions? {
    var options = ServeOptions()
    var reader = OptionReader(command: "serve", arguments)
    var password = Secret(option: "--password", variable: "REVUE_RTSP_PASSWORD")
    var rtspGiven = false
    while let option = reader.next() {
      switch option {
      case "--rtsp":
        let text = try reader.value(option)
        // [ADDR:]PORT; an IPv6 address in brackets.
        let split = text.lastIndex(of: ":")
        let portText = split.map { String(text[text.index(after: $0)...]) } ?? text
        guard let port = Int(portText), (0...65535).contains(port) else {
          throw UsageError(
            description: "serve: --rtsp is [ADDRESS:]PORT, such as 8554 or 127.0.0.1:8554, not '\(text)'")
        }
        options.port = port
        if let split {
          options.address = String(text[..<split]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        }
        rtspGiven = true
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
      case "--size":
        let text = try reader.value(option)
        let parts = text.split(separator: "x").compactMap { Int32($0) }
        guard parts.count == 2, parts[0] > 0, parts[1] > 0 else {
          throw UsageError(description: "serve: --size is WIDTHxHEIGHT, such as 1280x720, not '\(text)'")
        }
        options.size = Dimensions(width: parts[0], height: parts[1])
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
      default: guard try password.take(option, from: &reader) else { throw reader.unknown(option) }
      }
    }
    guard rtspGiven else { throw UsageError(description: "serve: --rtsp [ADDRESS:]PORT is required") }
    guard options.audio || options.audioCodec == .opus else {
      throw UsageError(description: "serve: --audio-codec goes with --audio")
    }
    options.password = try password.resolve("serve", environment: options.user == nil ? [:] : environment)?.value
    guard (options.user == nil) == (options.password == nil) else {
      throw UsageError(description: "serve: --user and --password go together")
    }
    guard options.user != nil || options.noAuth || Self.isLoopback(options.address) else {
      throw UsageError(
        description: "serve: \(options.address) lets anyone on the network watch the camera:"
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
    let track = LocalVideoTrack.createCameraTrack(
      options: CameraCaptureOptions(device: device, dimensions: options.size, fps: options.fps))
    let capturer = track.capturer!
    try await capturer.startCapture()
    let size = capturer.dimensions ?? options.size
    let encoding = VideoEncoding(
      maxBitrate: options.bitrate ?? VideoEncoding.forDimensions(size).maxBitrate, maxFps: options.fps)
    var microphone: LocalAudioTrack?
    if options.audio {
      let audio = LocalAudioTrack.createMicrophoneTrack(
        options: try await StreamCommand.microphoneOptions(for: options.source))
      do {
        try await audio.capturer?.startCapture()
      } catch {
        try await capturer.stopCapture()
        throw error
      }
      microphone = audio
    }
    let credentials = options.user.map { [RTSPBroadcast.Credentials(user: $0, password: options.password ?? "")] } ?? []
    let broadcast: RTSPBroadcast
    do {
      broadcast = try RTSPBroadcast(
        track: track, address: options.address, port: options.port, path: options.path, codec: options.codec,
        encoding: encoding, audio: microphone, audioCodec: options.audioCodec, credentials: credentials,
        authentication: options.authentication)
    } catch {
      try await capturer.stopCapture()
      try await microphone?.capturer?.stopCapture()
      throw error
    }
    let protection = credentials.isEmpty ? "" : ", \(options.authentication) authentication"
    let sound =
      microphone.map {
        " with \(($0.capturer as? MicrophoneCapturer)?.device?.name ?? $0.name)"
          + " in \(options.audioCodec == .opus ? "Opus" : "AAC")"
      } ?? ""
    FileHandle.standardError.write(
      Data(
        ("revue: serving \(device.name) \(size) \(options.codec) at \(encoding.maxBitrate / 1000) kbps\(sound)"
          + " on \(broadcast.url.absoluteString) (UDP and TCP\(protection))\n").utf8))
    let printer = StatusPrinter(json: options.json)
    let lastFrames = PreviousCount()
    await RunLoopControl.run(duration: options.duration) {
      let stats = broadcast.statistics
      let fps = lastFrames.advance(to: stats.framesSent)
      printer.print(
        [
          ("url", broadcast.url.absoluteString), ("framesSent", stats.framesSent), ("fps", fps),
          ("sessions", stats.sessions), ("encodersStarted", stats.encodersStarted),
        ],
        text:
          "\(stats.sessions) client(s)  \(fps) fps  frames \(stats.framesSent)  encoders started \(stats.encodersStarted)"
      )
    }
    printer.finish()
    let final = broadcast.statistics
    broadcast.stop()
    try await capturer.stopCapture()
    try await microphone?.capturer?.stopCapture()
    let audio = microphone == nil ? "" : " and \(final.audioBuffersSent) audio buffers"
    FileHandle.standardError.write(
      Data("revue: served \(final.framesSent) frames\(audio), \(final.encodersStarted) encoder(s) started\n".utf8))
  }
}

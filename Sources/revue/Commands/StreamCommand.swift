import Dispatch
import Foundation
import RevueCommandLine
import RevueSDK
import Synchronization

/// `revue stream`: a camera (or the virtual camera, a test pattern, or the screen) published over
/// RTP.
struct StreamCommand {
  var options: StreamOptions

  func run() async throws {
    let device = options.source == .screen ? nil : try await Self.pickCamera(options.source)
    if let whip = options.whip, let device { return try await publish(device, to: whip) }
    if let output = options.output, let device { return try await send(device, to: output) }
    let room = Room()
    let key = try options.srtpKey ?? (options.makesSRTPKey ? SRTPKey.random(suite: options.srtpSuite) : nil)
    try await room.connect(to: try Self.url(options.destination, key: key))
    if options.makesSRTPKey, let key { Self.announce(key, options: options) }
    let participant = room.localParticipant!
    let track = device == nil ? participant.screenShareTrack : participant.cameraTrack
    let capturer = track.capturer!
    if let device, let camera = capturer as? CameraCapturer {
      _ = try await camera.set(
        options: CameraCaptureOptions(device: device, dimensions: options.size, fps: options.fps))
    } else if let screen = capturer as? ScreenShareCapturer {
      screen.options = ScreenShareCaptureOptions(dimensions: options.size, fps: options.fps)
    }
    try await capturer.startCapture()
    let encoding = VideoEncoding(
      maxBitrate: options.bitrate ?? VideoEncoding.forDimensions(capturer.dimensions ?? options.size).maxBitrate,
      maxFps: options.fps)
    let publication = try await participant.publish(
      videoTrack: track,
      options: VideoPublishOptions(
        encoding: encoding, simulcast: options.simulcast, preferredCodec: options.codec, lossRecovery: options.recovery,
        adaptiveBitrate: !options.fixedBitrate))
    let microphone = options.audio ? try await Self.startMicrophone(for: options.source) : nil
    if let microphone { _ = try await participant.publish(audioTrack: microphone) }
    if let path = options.sdpPath { try Self.write(sdp: room.sdp, to: path, secret: key != nil) }
    let recording = try options.recording.record(publication, audio: microphone)
    let layers = zip(publication.layers, publication.ports).dropFirst().map { "\($0.dimensions) on port \($1)" }
    let size = capturer.dimensions.map(\.description) ?? "?"
    let what = device?.name ?? "the screen \(ProcessInfo.processInfo.environment["DISPLAY"] ?? "")"
    // The encoder, and why it is not the hardware one tried first when that one could not start.
    let encoder = publication.videoEncoder.map { " (\($0))" } ?? ""
    if let fallback = publication.encoderFallback {
      FileHandle.standardError.write(Data("revue: \(fallback.message)\n".utf8))
    }
    var started = "revue: streaming \(what) \(size) \(options.codec)\(encoder) at \(encoding.maxBitrate / 1000) kbps"
    if let key { started += " over SRTP (\(key.suite.rawValue))" }
    started += " to \(options.destination)" + (layers.isEmpty ? "" : ", with layers " + layers.joined(separator: ", "))
    FileHandle.standardError.write(Data((started + "\n").utf8))
    let printer = StatusPrinter(json: options.json)
    let lastFrames = PreviousCount()
    await RunLoopControl.run(duration: options.duration) {
      let stats = publication.statistics
      let fps = lastFrames.advance(to: stats.framesEncoded)
      let rtt = stats.roundTripTime.map { String(format: "%.1f ms", Self.milliseconds($0)) } ?? "—"
      let loss = stats.fractionLost.map { String(format: "%.1f%%", $0 * 100) } ?? "—"
      // The target and why it last moved, when the bitrate adapts (not with --fixed-bitrate).
      let target = stats.targetBitrate.map {
        "  target \($0 / 1000) kbps (\(stats.targetBitrateReason.map { "\($0)" } ?? "—"))"
      }
      printer.print(
        [
          ("framesEncoded", stats.framesEncoded), ("fps", fps), ("bitrate", Int(stats.bitrate)),
          ("rttMilliseconds", stats.roundTripTime.map(Self.milliseconds) as Any? ?? NSNull()),
          ("fractionLost", stats.fractionLost as Any? ?? NSNull()),
          ("targetBitrate", stats.targetBitrate as Any? ?? NSNull()),
          ("targetBitrateReason", stats.targetBitrateReason.map { "\($0)" } as Any? ?? NSNull()),
          ("frameRateHalved", stats.frameRateHalved),
        ],
        text: "\(fps) fps  \(Int(stats.bitrate / 1000)) kbps\(target ?? "")  RTT \(rtt)  loss \(loss)"
          + "  frames \(stats.framesEncoded)")
    }
    printer.finish()
    await recording?.finish()
    let final = publication.statistics
    try await capturer.stopCapture()
    try await microphone?.capturer?.stopCapture()
    await room.disconnect()
    FileHandle.standardError.write(
      Data(
        "revue: sent \(final.framesEncoded) frames (\(final.keyframes) keyframes), \(final.packetsSent) packets, \(final.bytesSent) bytes\n"
          .utf8))
  }

  /// `--whip`: the camera published over WebRTC to a WHIP endpoint until Ctrl-C or the duration,
  /// or until the connection drops.
  private func publish(_ device: CaptureDevice, to url: URL) async throws {
    let (track, capturer, size, encoding) = try await Self.startCamera(
      device, size: options.size, fps: options.fps, bitrate: options.bitrate)
    let microphone = options.audio ? try await Self.startMicrophone(for: options.source) : nil
    let publication: WHIPPublication
    do {
      publication = try await WHIPPublication(
        publishing: track, audio: microphone, to: url, token: options.token, codec: options.codec, encoding: encoding,
        adaptiveBitrate: !options.fixedBitrate)
    } catch {
      try await capturer.stopCapture()
      try await microphone?.capturer?.stopCapture()
      throw error
    }
    FileHandle.standardError.write(
      Data(
        ("revue: streaming \(device.name) \(size) \(options.codec) at \(encoding.maxBitrate / 1000) kbps over WebRTC to"
          + " \(WHIPPublication.redacted(publication.endpoint)) (session \(WHIPPublication.redacted(publication.resource)))"
          + (publication.layers.count > 1
            ? ", in simulcast layers \(publication.layers.map { "\($0.dimensions)" }.joined(separator: ", "))" : "")
          + "\n").utf8))
    let printer = StatusPrinter(json: options.json)
    let lastFrames = PreviousCount()
    // The publication fails when the connection fails or the endpoint stops answering.
    let ended = { @Sendable () -> Bool in if case .failed = publication.state { true } else { false } }
    await RunLoopControl.run(duration: options.duration, done: ended) {
      let stats = publication.statistics
      let fps = lastFrames.advance(to: stats.framesSent)
      printer.print(
        [("framesSent", stats.framesSent), ("fps", fps), ("connectionState", stats.connectionState)],
        text: "\(fps) fps  \(stats.connectionState)  frames \(stats.framesSent)")
    }
    printer.finish()
    let final = publication.statistics
    await publication.stop()
    try await capturer.stopCapture()
    try await microphone?.capturer?.stopCapture()
    let audio = microphone == nil ? "" : " and \(final.audioBuffersSent) audio buffers"
    FileHandle.standardError.write(
      Data(
        "revue: sent \(final.framesSent) frames\(audio) over WebRTC; the connection was \(final.connectionState)\n".utf8
      ))
    if case .failed(let fault) = publication.state {
      throw RevueError(
        .network, "the WHIP session with \(WHIPPublication.redacted(publication.endpoint)) failed: \(fault.message)")
    }
  }

  /// `--to srt://…` or `--to rtmp://…`: the camera (and the microphone, in AAC) sent in MPEG-TS
  /// over SRT or in FLV over RTMP until Ctrl-C or the duration; a dropped connection is made
  /// again (said on standard error), not the end.
  private func send(_ device: CaptureDevice, to destination: StreamOutput.Destination) async throws {
    let (track, capturer, size, encoding) = try await Self.startCamera(
      device, size: options.size, fps: options.fps, bitrate: options.bitrate)
    var microphone: LocalAudioTrack?
    let output: StreamOutput
    do {
      if options.audio { microphone = try await Self.startMicrophone(for: options.source) }
      output = try StreamOutput(track: track, audio: microphone, to: destination, encoding: encoding)
    } catch {
      try await capturer.stopCapture()
      try await microphone?.capturer?.stopCapture()
      throw error
    }
    let container = if case .srt = destination { "MPEG-TS over SRT" } else { "FLV over RTMP" }
    FileHandle.standardError.write(
      Data(
        ("revue: streaming \(device.name) \(size) h264 at \(encoding.maxBitrate / 1000) kbps"
          + (microphone == nil ? "" : " with AAC audio") + " in \(container) to \(destination)\n").utf8))
    let events = Task {
      for await event in output.events {
        switch event {
        case .reconnecting(let attempt, let wait):
          FileHandle.standardError.write(
            Data("revue: the connection dropped: connecting again in \(wait) (attempt \(attempt))\n".utf8))
        case .reconnected(let attempt):
          FileHandle.standardError.write(Data("revue: connected again (attempt \(attempt))\n".utf8))
        case .fault(let fault) where fault.severity == .error:
          FileHandle.standardError.write(Data("revue: \(fault)\n".utf8))
        default: break
        }
      }
    }
    let printer = StatusPrinter(json: options.json)
    let lastFrames = PreviousCount()
    await RunLoopControl.run(duration: options.duration) {
      let stats = output.statistics
      let fps = lastFrames.advance(to: stats.framesSent)
      printer.print(
        [("framesSent", stats.framesSent), ("fps", fps), ("reconnections", stats.reconnections)],
        text: "\(fps) fps  frames \(stats.framesSent)  reconnections \(stats.reconnections)")
    }
    printer.finish()
    await output.stop()
    events.cancel()
    let final = output.statistics
    try await capturer.stopCapture()
    try await microphone?.capturer?.stopCapture()
    let audio = microphone == nil ? "" : " and \(final.audioBuffersSent) audio buffers"
    FileHandle.standardError.write(
      Data(
        "revue: sent \(final.framesSent) frames\(audio) in \(container), \(final.reconnections) reconnection(s)\n".utf8)
    )
  }

  /// The camera asked for, or the first one, or the virtual camera (said so) when there is none.
  static func pickCamera(_ source: StreamOptions.Source) async throws -> CaptureDevice {
    switch source {
    case .camera(let id): return try await CameraCapturer.captureDevice(id: id)
    case .virtualCamera(let profile): return try await VirtualDevices.camera(profile: profile)
    case .testPattern, .screen: return try await VirtualDevices.camera(profile: "csi-camera-module")
    case .firstCamera:
      let (device, isVirtual) = try await VirtualDevices.cameraOrVirtual()
      if isVirtual {
        FileHandle.standardError.write(Data("revue: no camera found: using the virtual camera \(device.name)\n".utf8))
      }
      return device
    }
  }

  /// Starts capturing the microphone `source` goes with (``microphoneOptions(for:)``); returns
  /// its track.
  static func startMicrophone(for source: StreamOptions.Source) async throws -> LocalAudioTrack {
    let track = LocalAudioTrack.createMicrophoneTrack(options: try await microphoneOptions(for: source))
    try await track.capturer?.startCapture()
    return track
  }

  /// Starts capturing `device` at `size` and `fps`; returns its track, its capturer, the size
  /// it gives, and the encoding of that size: `bitrate` (nil: the size's own), at `fps`.
  static func startCamera(_ device: CaptureDevice, size: Dimensions, fps: Int, bitrate: Int?) async throws
    -> (track: LocalVideoTrack, capturer: VideoCapturer, size: Dimensions, encoding: VideoEncoding)
  {
    let track = LocalVideoTrack.createCameraTrack(
      options: CameraCaptureOptions(device: device, dimensions: size, fps: fps))
    let capturer = track.capturer!
    try await capturer.startCapture()
    let given = capturer.dimensions ?? size
    return (
      track, capturer, given,
      VideoEncoding(maxBitrate: bitrate ?? VideoEncoding.forDimensions(given).maxBitrate, maxFps: fps)
    )
  }

  /// The microphone for `source` (of `revue stream` and `revue serve`): the first one, or a
  /// virtual one (said so) when there is none; with the test pattern, always the virtual
  /// microphone of the sync signal, which beeps as the pattern flashes. A virtual microphone is
  /// captured without voice processing: noise suppression would take its steady beep for noise.
  static func microphoneOptions(for source: StreamOptions.Source) async throws -> AudioCaptureOptions {
    let device: CaptureDevice
    if case .testPattern = source {
      device = try await VirtualDevices.microphone(name: "Sync Signal", signal: .sync)
    } else {
      let (found, isVirtual) = try await VirtualDevices.microphoneOrVirtual()
      if isVirtual {
        FileHandle.standardError.write(
          Data("revue: no microphone found: using a virtual one (a beep once a second, the sync signal)\n".utf8))
      }
      device = found
    }
    return VirtualDevices.isVirtual(device)
      ? .preset(.musicStandard, device: device) : AudioCaptureOptions(device: device)
  }

  /// `rtp://DESTINATION`, or `srtp://DESTINATION?key=…` with a key.
  static func url(_ destination: String, key: SRTPKey? = nil) throws -> URL {
    guard var components = URLComponents(string: "\(key == nil ? "rtp" : "srtp")://\(destination)"),
      components.host != nil
    else {
      throw RevueError(.invalidInput, "'\(destination)' is not HOST:PORT")
    }
    if let key {
      components.percentEncodedQueryItems = [
        URLQueryItem(name: "key", value: key.base64.addingPercentEncoding(withAllowedCharacters: .alphanumerics)),
        URLQueryItem(name: "suite", value: key.suite == .aeadAES128GCM ? "aes-128-gcm" : "aes-cm-128-hmac-sha1-80"),
      ]
    }
    guard let url = components.url else { throw RevueError(.invalidInput, "'\(destination)' is not HOST:PORT") }
    return url
  }

  /// Prints a key made at the start, once, on standard output, with how to give it to the
  /// receiver (the line that explains does not repeat it): in a file or the environment, not on
  /// a command line, which every local user can read.
  static func announce(_ key: SRTPKey, options: StreamOptions) {
    let port = options.destination.split(separator: ":").last.map(String.init) ?? "PORT"
    let suite = key.suite == .aesCM128HMACSHA1_80 ? "" : " --srtp-suite aes-128-gcm"
    let how = { (key: String) in
      "give the receiver this key, and only it: revue receive --port \(port)\(suite) --srtp-key-file FILE,"
        + " FILE holding \(key) and readable by the receiver alone (or REVUE_SRTP_KEY set to it)"
        + (options.sdpPath.map { ", or the SDP file \($0), which holds it (a=crypto)" } ?? "")
    }
    if options.json {
      let object = ["srtpKey": key.base64, "suite": key.suite.rawValue, "howToReceive": how("the key")]
      if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
        print(String(decoding: data, as: UTF8.self))
      }
    } else {
      print("SRTP key (\(key.suite.rawValue)): \(key.base64)")
      print("revue: \(how("<the key above>"))")
    }
    fflush(nil)
  }

  /// Writes the SDP; one that holds a key is readable by its owner only from the start: it is
  /// written into a new file made 0600 (`mkstemp`) beside `path`, then renamed over it, so that
  /// neither a moment before a chmod nor a file already there (0644, or open in a reader) ever
  /// holds the key for others. (`FileManager.createFile` with attributes writes the file as the
  /// umask leaves it, 0644, and chmods it afterwards.)
  static func write(sdp: String, to path: String, secret: Bool) throws {
    guard secret else { return try sdp.write(toFile: path, atomically: true, encoding: .utf8) }
    let url = URL(fileURLWithPath: path)
    var template = Array(
      url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).XXXXXX").path.utf8CString)
    let fd = mkstemp(&template)
    guard fd >= 0 else {
      throw RevueError(.invalidInput, "cannot write the SDP file \(path): \(String(cString: strerror(errno)))")
    }
    var written = 0
    var failure: Int32 = 0
    let bytes = Array(sdp.utf8)
    while written < bytes.count {
      let count = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else {
        failure = count < 0 ? errno : EIO
        break
      }
      written += count
    }
    if failure == 0 && fsync(fd) != 0 { failure = errno }
    close(fd)
    if failure == 0 && rename(template, path) != 0 { failure = errno }
    guard failure == 0 else {
      unlink(template)
      throw RevueError(.invalidInput, "cannot write the SDP file \(path): \(String(cString: strerror(failure)))")
    }
  }

  static func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
  }
}

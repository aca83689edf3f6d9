import Foundation
import RevueSDK
import Synchronization

/// `revue receive`: decodes a stream sent to a port (or described by an SDP file), shows its
/// statistics, and writes a PNG of a received frame on request.
struct ReceiveCommand {
  var options: ReceiveOptions

  func run() async throws {
    let room = Room()
    let remote: RemoteParticipant
    if let path = options.sdpPath {
      let sdp: String
      do {
        sdp = try String(contentsOfFile: path, encoding: .utf8)
      } catch {
        throw RevueError(.invalidInput, "cannot read SDP file \(path)", underlying: error)
      }
      remote = try await room.listen(
        sdp: sdp, latency: options.latency, lossRecovery: options.recovery, measuresAVSync: true, from: options.source)
    } else {
      remote = try await room.listen(
        on: try StreamCommand.url("0.0.0.0:\(options.port)", key: options.srtpKey), codec: options.codec ?? .vp8,
        latency: options.latency, lossRecovery: options.recovery, from: options.source)
    }
    guard let track = remote.videoTrack else { throw RevueError(.invalidInput, "the stream has no video to receive") }
    var receiving = "revue: receiving \(track.codec) from \(remote.identity)"
    if options.srtpKey != nil { receiving += " over SRTP" }
    if let source = options.source { receiving += ", taking packets from \(source) only" }
    FileHandle.standardError.write(Data((receiving + "\n").utf8))
    // In a window: with no display the view says so in one line and draws offscreen, and the
    // node goes on receiving.
    let view = options.window ? await Self.show(track) : nil
    // The stream's audio, if it has some, plays on this machine's sound output.
    var speaker: AudioPlayer?
    let level = AudioLevelMeter()
    if let audio = remote.audioTrack {
      audio.add(audioRenderer: level)
      do {
        speaker = try AudioPlayer()
        audio.add(audioRenderer: speaker!)
        FileHandle.standardError.write(Data("revue: playing its Opus audio\n".utf8))
      } catch {
        FileHandle.standardError.write(Data("revue: the audio is not played: \(error)\n".utf8))
      }
    }
    let printer = StatusPrinter(json: options.json)
    let lastFrames = PreviousCount()
    let wanted = options.frames
    await RunLoopControl.run(
      duration: options.duration, done: { wanted.map { track.statistics.framesDecoded >= $0 } ?? false }
    ) {
      let stats = track.statistics
      let fps = lastFrames.advance(to: stats.framesDecoded)
      let latency = stats.latency.map { String(format: "%.1f ms", StreamCommand.milliseconds($0)) } ?? "—"
      let jitter = String(format: "%.1f ms", StreamCommand.milliseconds(stats.jitter))
      let loudness = level.read()
      let audio = remote.audioTrack == nil ? "" : "  audio \(loudness.map { String(format: "%.0f dBFS", $0) } ?? "—")"
      printer.print(
        [
          ("framesDecoded", stats.framesDecoded), ("fps", fps), ("bitrate", Int(stats.bitrate)),
          ("packetsLost", stats.packetsLost), ("framesDropped", stats.framesDropped),
          ("invalidPackets", stats.invalidPackets), ("packetsUnauthenticated", stats.packetsUnauthenticated),
          ("packetsFromOtherSources", stats.packetsFromOtherSources),
          ("packetsFromOtherSenders", stats.packetsFromOtherSenders),
          ("jitterMilliseconds", StreamCommand.milliseconds(stats.jitter)),
          ("latencyMilliseconds", stats.latency.map(StreamCommand.milliseconds) as Any? ?? NSNull()),
          ("avSyncMilliseconds", remote.avSyncMilliseconds as Any? ?? NSNull()),
          ("sender", remote.identity), ("muted", track.isMuted),
          ("audioLevelDBFS", loudness as Any? ?? NSNull()),
        ],
        text:
          "\(fps) fps  \(Int(stats.bitrate / 1000)) kbps  lost \(stats.packetsLost)  jitter \(jitter)  latency \(latency)"
          + "  frames \(stats.framesDecoded)\(audio)  from \(remote.identity)"
          + (track.isMuted ? "  (muted by the sender)" : "")
      )
    }
    printer.finish()
    speaker?.stop()
    let final = track.statistics
    if let path = options.snapshotPath {
      guard let frame = track.lastFrame else {
        throw RevueError(.invalidState, "no frame arrived: no snapshot written")
      }
      try await frame.writePNG(to: URL(fileURLWithPath: path))
      FileHandle.standardError.write(Data("revue: wrote \(frame.width)x\(frame.height) snapshot to \(path)\n".utf8))
    }
    await MainActor.run { view?.track = nil }
    await room.disconnect()
    var summary =
      "revue: received \(final.framesDecoded) frames, \(final.packetsReceived) packets, \(final.packetsLost) lost"
    if final.packetsUnauthenticated > 0 {
      summary += ", \(final.packetsUnauthenticated) dropped by SRTP (failed authentication: another key?)"
    }
    if final.packetsFromOtherSources > 0 { summary += ", \(final.packetsFromOtherSources) from other hosts dropped" }
    if final.packetsFromOtherSenders > 0 {
      summary += ", \(final.packetsFromOtherSenders) from senders other than the one followed dropped"
    }
    FileHandle.standardError.write(Data((summary + "\n").utf8))
    if let wanted = options.frames, final.framesDecoded < wanted {
      throw RevueError(.invalidState, "only \(final.framesDecoded) of \(wanted) frames arrived")
    }
  }
}

/// `revue demo`: a sender and a receiver in one process on loopback, then a summary.
struct DemoCommand {
  var duration: Int

  func run() async throws {
    let port = 2 * Int.random(in: 15_000..<30_000)
    let (device, isVirtual) = try await VirtualDevices.cameraOrVirtual()
    if isVirtual {
      FileHandle.standardError.write(Data("revue: no camera found: using the virtual camera \(device.name)\n".utf8))
    }
    let receiving = Room()
    let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
    let received = remote.videoTrack!
    let sending = Room()
    try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let participant = sending.localParticipant!
    let capturer = participant.cameraTrack.capturer as! CameraCapturer
    _ = try await capturer.set(options: CameraCaptureOptions(device: device, dimensions: .h720_169, fps: 30))
    try await capturer.startCapture()
    let publication = try await participant.publish(videoTrack: participant.cameraTrack)
    FileHandle.standardError.write(
      Data("revue: demo: \(device.name) → VP8 → RTP 127.0.0.1:\(port) → decoder, for \(duration) s\n".utf8))
    let start = ContinuousClock.now
    await RunLoopControl.run(duration: duration) {}
    let seconds = StreamCommand.milliseconds(ContinuousClock.now - start) / 1000
    let sent = publication.statistics
    let receivedStatistics = received.statistics
    let format = capturer.format
    let snapshot = FileManager.default.temporaryDirectory.appendingPathComponent("revue-demo.png")
    if let frame = received.lastFrame { try await frame.writePNG(to: snapshot) }
    try await capturer.stopCapture()
    await sending.disconnect()
    await receiving.disconnect()
    let rows: [(String, String)] = [
      ("camera", "\(device.name)\(isVirtual ? " (virtual)" : "") \(format.map(\.description) ?? "")"),
      ("frames sent", "\(sent.framesEncoded) (\(sent.keyframes) keyframes)"),
      ("frames received", "\(receivedStatistics.framesDecoded)"),
      ("bitrate", String(format: "%.0f kbps", Double(sent.bytesSent) * 8 / seconds / 1000)),
      ("packets lost", "\(receivedStatistics.packetsLost)"),
      (
        "latency",
        receivedStatistics.latency.map {
          String(format: "%.1f ms, capture to decoded (mean)", StreamCommand.milliseconds($0))
        } ?? "no sender report yet"
      ),
      (
        "round-trip time",
        sent.roundTripTime.map { String(format: "%.2f ms", StreamCommand.milliseconds($0)) } ?? "no report yet"
      ),
      ("snapshot", received.lastFrame == nil ? "none (no frame)" : snapshot.path),
    ]
    for (name, value) in rows { print(name.padding(toLength: 17, withPad: " ", startingAt: 0) + value) }
    guard receivedStatistics.framesDecoded > 0 else {
      throw RevueError(.invalidState, "no frame arrived at the receiver")
    }
  }
}

extension ReceiveCommand {
  /// A 1280×720 window (``VideoView``) fitting `track`; with no display, the view's one
  /// line in the log says so.
  @MainActor static func show(_ track: RemoteVideoTrack) -> VideoView {
    let view = VideoView(size: .h720_169, target: .window)
    view.layoutMode = .fit
    view.track = track
    return view
  }
}

/// The level of the audio a receiver decodes, for its status lines: the RMS of the samples
/// rendered since the previous read, in dB relative to full scale (a 1 kHz sine at an eighth of
/// full scale reads -21; silence reads nothing).
final class AudioLevelMeter: AudioRenderer {
  private let sums = Mutex((squares: 0.0, count: 0))

  /// Adds the buffer's samples (16-bit, the receiver's format) to the sums.
  func render(pcmBuffer: AudioPCMBuffer) {
    guard let samples = pcmBuffer.int16Samples else { return }
    let squares = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
    sums.withLock { $0 = ($0.squares + squares, $0.count + samples.count) }
  }

  /// The level since the previous read, in dBFS; nil when no audio came or it was silent.
  func read() -> Double? {
    let (squares, count) = sums.withLock { sums in
      defer { sums = (0, 0) }
      return sums
    }
    guard count > 0, squares > 0 else { return nil }
    return 20 * log10((squares / Double(count)).squareRoot() / 32_768)
  }
}

import Foundation
import RevueSDK
import Synchronization

/// `revue receive`: decodes a stream sent to a port (or described by an SDP file, or played from
/// a WHEP server), shows its statistics, and writes a PNG of a received frame on request.
struct ReceiveCommand {
  var options: ReceiveOptions

  func run() async throws {
    let room = Room()
    // A sender that stops and starts again later is shown again: the command outlives it.
    room.endsParticipantsThatLeave = false
    let remote: RemoteParticipant
    if let whep = options.whep {
      remote = try await room.watch(whep: whep, token: options.token)
    } else if let path = options.sdpPath {
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
    if options.whep != nil { receiving += " over WebRTC (WHEP)" }
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
    let recording = try options.recording.record(receiving: track, audio: remote.audioTrack)
    let printer = StatusPrinter(json: options.json)
    let lastFrames = PreviousCount()
    let wanted = options.frames
    // A WHEP session that fails (its connection, or a server gone silent) ends the command.
    let endsWithTheStream = options.whep != nil
    await RunLoopControl.run(
      duration: options.duration,
      done: {
        (endsWithTheStream && track.state != .running) || wanted.map { track.statistics.framesDecoded >= $0 } ?? false
      }
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
    await recording?.finish()
    speaker?.stop()
    let final = track.statistics
    let ended = track.state
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
    if endsWithTheStream, case .failed(let fault) = ended {
      throw RevueError(.network, "the WHEP session with \(remote.identity) failed: \(fault.message)")
    }
    if let wanted = options.frames, final.framesDecoded < wanted {
      throw RevueError(.invalidState, "only \(final.framesDecoded) of \(wanted) frames arrived")
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

import Foundation
import GStreamer
import Synchronization

/// A local video track, and an audio track if given, sent to the tools people already stream
/// to: over SRT in MPEG-TS (OBS, broadcast encoders, ffmpeg, `srtsrc`), or over RTMP in FLV
/// (nginx-rtmp, YouTube, Twitch). H.264 always, with a keyframe every 2 s so that a viewer who
/// joins starts within 2 s; the audio in AAC-LC (or Opus, over SRT).
///
///     let output = try StreamOutput(track: camera, to: .srt(host: "203.0.113.7", port: 9000))
///     let output = try StreamOutput(track: camera, to: .rtmp(URL(string: "rtmp://host/live/KEY")!))
///
/// Its send pipeline is every transport's (`SourceFeed`, `VideoEncoder`, `AudioEncoder`),
/// with a muxer and a network sink as its tail:
///
///     appsrc ! encoder chain ─┐
///                             ├─ mpegtsmux (188 × 7 bytes a message) ! srtsink
///     appsrc ! encoder chain ─┘  flvmux ! rtmp2sink
///
/// A fault of the pipeline (the server dropped the connection, a caller found no listener)
/// does not end the output: it reaches ``events``, and the pipeline is built again after 1, 2,
/// then 4 s (``StreamEvent/reconnecting(attempt:after:)``, then
/// ``StreamEvent/reconnected(attempt:)``), the tracks going on meanwhile. The wait starts again
/// from 1 s once a pipeline ran 10 s.
public final class StreamOutput: Sendable {
  /// Where the media goes.
  public enum Destination: Sendable, Hashable, CustomStringConvertible {
    /// SRT: to a listener at `host:port` (`mode` `.caller`), or as the listener on
    /// `host:port` that callers connect to (`.listener`; `host` the address to listen on).
    case srt(host: String, port: Int, mode: SRTMode = .caller, options: SRTOptions = SRTOptions())
    /// RTMP: `rtmp://HOST[:PORT]/APP/KEY`, as a server gives it (`rtmps://` for TLS).
    case rtmp(URL)

    /// `srt://HOST:PORT` (with `?mode=listener` for a listener), or the RTMP URL without its
    /// key (the last part of its path, a secret).
    public var description: String {
      switch self {
      case .srt(let host, let port, let mode, _):
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return "srt://\(bracketed):\(port)" + (mode == .listener ? "?mode=listener" : "")
      case .rtmp(let url):
        return url.deletingLastPathComponent().absoluteString + "…"
      }
    }
  }

  /// Which end of an SRT connection the output is.
  public enum SRTMode: String, Sendable, Hashable {
    /// It connects to a listener.
    case caller
    /// It waits for callers (and serves each that connects, one after the other or at once).
    case listener
  }

  /// How an SRT connection is made.
  public struct SRTOptions: Sendable, Hashable {
    /// How long the receiver holds each packet before it plays it, in milliseconds: the time
    /// SRT has to send a lost packet again. 120 ms by default (SRT's own), 20–8000.
    public var latency: Int
    /// The passphrase the stream is encrypted with (AES), 10 to 79 characters; nil: not
    /// encrypted. Both ends must give the same one.
    public var passphrase: String?

    /// SRT's defaults: 120 ms, no encryption.
    public init(latency: Int = 120, passphrase: String? = nil) {
      self.latency = latency
      self.passphrase = passphrase
    }
  }

  /// What the output has done.
  public struct Statistics: Sendable, Hashable {
    /// Frames the track gave to the encoder.
    public var framesSent: Int
    /// Frames the encoder made and handed to the muxer: fewer than ``framesSent`` when the
    /// encoder fell behind (its source holds a second, then drops the oldest).
    public var framesEncoded: Int
    /// Audio buffers the audio track gave to its encoder (none without one).
    public var audioBuffersSent: Int
    /// Pipelines started: 1, and one more for each reconnection.
    public var pipelinesStarted: Int
    /// Faults that made the output build its pipeline again.
    public var reconnections: Int
    /// SRT callers that connected to a listening output, each sent a keyframe at once.
    public var callersJoined: Int
  }

  /// Where the media goes.
  public let destination: Destination
  /// The codec the audio is sent in (AAC-LC always over RTMP).
  public let audioCodec: AudioCodec

  private let output: Output
  private let status: StreamStatus

  /// Sends `track` (and `audio`) to `destination` from now on.
  /// - Parameters:
  ///   - track: the video track sent (H.264).
  ///   - destination: an SRT listener to call, an SRT port to listen on, or an RTMP server.
  ///   - encoding: the bitrate and frame rate; by default the track's size's, at 30 fps.
  ///   - audio: an audio track (a microphone) muxed beside the video.
  ///   - audioEncoding: its bitrate; 48 kb/s by default.
  ///   - audioCodec: AAC-LC by default (what every SRT and RTMP receiver plays); Opus only over
  ///     SRT.
  /// - Throws: ``RevueError``: `.invalidInput` for an SRT port, latency or passphrase out of
  ///   range, an RTMP URL without an application and a key, or Opus over RTMP; `.gstreamer`
  ///   for an element this machine lacks, `.network` for an address that cannot be used.
  ///   Nothing is left running then. A listener not there yet, or a server that refuses, is a
  ///   fault like a dropped connection: the output tries again (see ``events``).
  public init(
    track: LocalVideoTrack, audio: LocalAudioTrack? = nil, to destination: Destination,
    encoding: VideoEncoding? = nil, audioEncoding: AudioEncoding = .presetMusic, audioCodec: AudioCodec = .aac
  ) throws(RevueError) {
    let tail = try Self.tail(for: destination, audioCodec: audioCodec)
    let size = track.publishedSize
    let layer = VideoParameters(dimensions: size, encoding: encoding ?? VideoEncoding.forDimensions(size))
    var video: ElementChain
    do {
      video = try VideoEncoder(.h264, layer, scaled: false).chain()
    } catch {
      throw RevueError(.gstreamer, "cannot describe the H.264 encoder", underlying: error)
    }
    // The muxer takes the parser's H.264 (byte-stream for TS, avc for FLV: h264parse converts).
    video.elements.removeLast()
    var sound: ElementChain?
    if audio != nil {
      var chain = AudioEncoder(encoding: audioEncoding, dtx: false, codec: audioCodec).chain(
        encoderName: "audioencoder")
      chain.last = ElementRecipe(audioCodec == .aac ? "aacparse" : "opusparse")
      sound = chain
    }
    let status = StreamStatus(name: "the output of \(track.name) to \(destination)")
    self.status = status
    self.destination = destination
    self.audioCodec = audioCodec
    output = Output(
      recipe: Output.Recipe(
        video: video, audio: sound, tail: tail, frameRate: layer.encoding.maxFps,
        audioPriming: audio != nil && audioCodec == .aac ? PrimedAudio.aacPriming : 0),
      track: track, audio: audio, status: status)
    do {
      try output.start()
    } catch {
      output.stop()
      status.stopped()
      let kind: RevueError.Kind = error.isStartFailure ? .network : .gstreamer
      throw RevueError(kind, "cannot send to \(destination)", underlying: error)
    }
  }

  deinit { output.stop() }

  /// Whether the output sends (reconnecting included) or was stopped.
  public var state: StreamState { status.state }

  /// The output's changes from now on: the faults of its pipeline (GStreamer's text and the
  /// element's path), each reconnection, and its end.
  public var events: AsyncStream<StreamEvent> { status.events }

  /// What the output has done so far.
  public var statistics: Statistics { output.statistics }

  /// Ends the stream the way a receiver expects, then stops: the encoders finish their last
  /// frame, the muxer its last packet, RTMP's server is told the stream ends; over SRT the
  /// connection is closed only once the receiver's latency has passed, so that it plays the
  /// last frames rather than drop them with the connection. Waits 3 s at most (plus the SRT
  /// latency), well under a second usually; the tracks go on.
  public func stop() async {
    await output.finish(drainingFor: drainTime)
    status.stopped()
  }

  /// How long a receiver holds what was sent last: SRT's latency, and twice a loopback's
  /// round trip; nothing for RTMP (TCP: the server has what was written).
  private var drainTime: Duration {
    guard case .srt(_, _, _, let options) = destination else { return .zero }
    return .milliseconds(options.latency + 100)
  }

  // MARK: - Tails

  /// The muxer and the sink for `destination`.
  /// - Throws: ``RevueError`` (`.invalidInput`) naming what is wrong with the destination.
  static func tail(for destination: Destination, audioCodec: AudioCodec) throws(RevueError) -> ElementChain {
    switch destination {
    case .srt(let host, let port, let mode, let options):
      guard (1...65535).contains(port) else {
        throw RevueError(.invalidInput, "the SRT port \(port) is not 1–65535")
      }
      guard !host.isEmpty || mode == .listener, !host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "?" })
      else {
        throw RevueError(.invalidInput, "'\(host)' is not a host for SRT")
      }
      guard (20...8000).contains(options.latency) else {
        throw RevueError(.invalidInput, "the SRT latency \(options.latency) ms is not 20–8000 ms")
      }
      if let passphrase = options.passphrase, !(10...79).contains(passphrase.utf8.count) {
        throw RevueError(
          .invalidInput, "the SRT passphrase has \(passphrase.utf8.count) bytes: SRT takes 10 to 79")
      }
      let bracketed = host.contains(":") ? "[\(host)]" : (host.isEmpty ? "0.0.0.0" : host)
      var sink = ElementRecipe(
        "srtsink", name: "sink",
        [
          // The mode and latency in the URI: srtsink takes its mode from there (the property
          // alone left a listener that answered no caller).
          "uri": .string("srt://\(bracketed):\(port)?mode=\(mode.rawValue)&latency=\(options.latency)"),
          // A listener sends to whoever is connected, and drops what comes while no one is; a
          // caller starts once connected (else the first keyframe goes nowhere).
          "wait-for-connection": .bool(mode == .caller),
          // A dropped connection is a fault the output handles as any other (events, waits of
          // 1, 2, 4 s), not srtsink's own silent retry in its streaming thread, which also held
          // up the end of the stream.
          "auto-reconnect": .bool(false),
        ])
      if let passphrase = options.passphrase {
        sink.set("passphrase", .string(passphrase))
        sink.set("pbkeylen", .enumeration("16"))
      }
      // SRT sends each buffer as one message, of 1456 bytes at most in live mode (a larger one
      // is refused, and what it held is lost): seven TS packets, 1316 bytes, as every SRT
      // sender does.
      return [ElementRecipe("mpegtsmux", name: "mux", ["alignment": .int(7)]), sink]
    case .rtmp(let url):
      guard ["rtmp", "rtmps"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false,
        url.pathComponents.filter({ $0 != "/" }).count >= 2
      else {
        throw RevueError(.invalidInput, "'\(url.absoluteString)' is not rtmp://HOST/APP/KEY")
      }
      guard audioCodec == .aac else {
        throw RevueError(.invalidInput, "RTMP carries AAC audio, not \(audioCodec.rawValue)")
      }
      return [
        ElementRecipe("flvmux", name: "mux", ["streamable": .bool(true)]),
        ElementRecipe("rtmp2sink", name: "sink", ["location": .string(url.absoluteString)]),
      ]
    }
  }

  // MARK: - The pipeline, built again after a fault

  /// The feeds of the tracks and the pipeline they feed now; builds it again after a fault.
  final class Output: Sendable {
    /// What a pipeline is built from.
    struct Recipe: Sendable {
      var video: ElementChain
      var audio: ElementChain?
      var tail: ElementChain
      var frameRate: Int
      /// The audio encoder's priming, in samples: the audio is stamped as captured that much
      /// earlier (`PrimedAudio`), as a recording's AAC is. MPEG-TS and FLV cannot say to
      /// skip those samples, and players play them: over SRT each beep of the sync signal
      /// came 21.2 ms after its flash in what ffmpeg received.
      var audioPriming = 0
    }

    private struct State {
      var media: MediaPipeline?
      /// The reconnection under way (its number from 1), or 0.
      var attempt = 0
      /// When the pipeline now running started.
      var started = ContinuousClock.now
      var pipelinesStarted = 0
      var reconnections = 0
      var callersJoined = 0
      var stopped = false
    }

    /// A pipeline that ran this long without a fault starts the waits again from 1 s.
    static let steadyTime = Duration.seconds(10)
    /// How long the end of the stream may take to pass the queues, the encoders, the muxer and
    /// the sink: on a loaded machine the sources hold up to a second of media before encoders
    /// that fell behind (with 1 s, 16 of 84 frames were cut off once).
    static let endTime = Duration.seconds(3)
    /// The longest wait between two attempts.
    static let longestWait = Duration.seconds(4)

    private let state = Mutex(State())
    /// Frames out of the video encoders, in every pipeline so far.
    private let encoded = Atomic(0)
    private let recipe: Recipe
    private let track: LocalVideoTrack
    private let audio: LocalAudioTrack?
    private let status: StreamStatus
    let frames: SourceFeed
    let sound = SourceFeed()
    /// What the audio track feeds: `sound`, or before it the priming's compensation.
    private let soundInput: any MediaSink

    init(recipe: Recipe, track: LocalVideoTrack, audio: LocalAudioTrack?, status: StreamStatus) {
      self.recipe = recipe
      self.track = track
      self.audio = audio
      self.status = status
      frames = SourceFeed(frameRate: recipe.frameRate)
      soundInput = recipe.audioPriming > 0 ? PrimedAudio(feed: sound, samples: recipe.audioPriming) : sound
    }

    var statistics: Statistics {
      state.withLock { state in
        Statistics(
          framesSent: frames.framesSent, framesEncoded: encoded.load(ordering: .relaxed),
          audioBuffersSent: sound.framesSent, pipelinesStarted: state.pipelinesStarted,
          reconnections: state.reconnections, callersJoined: state.callersJoined)
      }
    }

    /// Builds and plays the first pipeline, and attaches the feeds to the tracks.
    func start() throws(GStreamerError) {
      let media = try build()
      state.withLock { state in
        state.media = media
        state.pipelinesStarted = 1
        state.started = .now
      }
      track.attach(frames)
      audio?.attach(soundInput)
    }

    /// A pipeline of the recipe, playing; for a reconnection, `attempt` is its number, which
    /// ``StreamEvent/reconnected(attempt:)`` gives once the sink has sent (see
    /// ``watchConnection(of:attempt:)``).
    private func build(attempt: Int? = nil) throws(GStreamerError) -> MediaPipeline {
      let media = MediaPipeline(name: "stream-output") { [weak self] fault in self?.fault(fault) }
      // The sources hold a second of media, not two frames as a real-time transport's: the
      // muxer holds the first frames until the audio's first come (and the encoders start),
      // and a receiver that buffers 120 ms or more loses nothing to a wait this short (with
      // two frames, 3 of 176 were dropped at the start on a clean link, 18 through 5 % loss).
      var videoSource = SourceFeed.source()
      videoSource.set("max-buffers", .int(max(recipe.frameRate, MediaPipeline.queuedFrames)))
      var audioSource = SourceFeed.source(named: "audiosource", audio: true)
      audioSource.set("max-buffers", .int(50))
      do {
        let video = try media.addMedia(from: frames, source: videoSource, branches: [("video", recipe.video)])
        let tail = try recipe.tail.add(to: media.pipeline)
        video[0].staticPad("src")?.addProbe(.buffer) { [weak self] _, _ in
          self?.encoded.add(1, ordering: .relaxed)
          return .ok
        }
        if let attempt, let sink = tail.last { watchConnection(of: sink, attempt: attempt) }
        if let sink = tail.last, sink.factoryName == "srtsink" { keyframeOnJoin(of: sink, encoder: video[0]) }
        try video[0].link(tail[0])
        if let chain = recipe.audio {
          let branch = try media.addMedia(
            from: sound, source: audioSource, branches: [("audio", chain)])
          try branch[0].link(tail[0])
        }
        try media.play()
      } catch {
        frames.attach(nil)
        sound.attach(nil)
        media.stop()
        throw error
      }
      return media
    }

    /// A fault of the pipeline now running: reported; an error (the pipeline has stopped)
    /// makes a new one after a wait. Called on the posting thread.
    private func fault(_ fault: MediaFault) {
      status.report(fault, ends: false)
      guard fault.severity == .error else { return }
      scheduleReconnection()
    }

    /// Waits 1, 2, then 4 s (from 1 s again after a pipeline that ran ``steadyTime``) and
    /// builds the pipeline again.
    private func scheduleReconnection() {
      let next: (attempt: Int, wait: Duration)? = state.withLock { state in
        guard !state.stopped else { return nil }
        if state.attempt == 0 || ContinuousClock.now - state.started >= Self.steadyTime {
          state.attempt = 1
        } else {
          state.attempt += 1
        }
        state.reconnections += 1
        let wait = min(Self.longestWait, .seconds(1 << min(state.attempt - 1, 8)))
        return (state.attempt, wait)
      }
      guard let next else { return }
      frames.attach(nil)
      sound.attach(nil)
      status.note(.reconnecting(attempt: next.attempt, after: next.wait))
      Task.detached { [weak self] in
        try? await Task.sleep(for: next.wait)
        self?.reconnect(attempt: next.attempt)
      }
    }

    /// Builds the pipeline again, unless stopped meanwhile; a pipeline that cannot start waits
    /// for the next attempt.
    private func reconnect(attempt: Int) {
      guard !state.withLock({ $0.stopped }) else { return }
      let old = state.withLock { $0.media.take() }
      old?.stop()
      do {
        let media = try build(attempt: attempt)
        let kept = state.withLock { state in
          guard !state.stopped else { return false }
          state.media = media
          state.started = .now
          state.pipelinesStarted += 1
          return true
        }
        guard kept else { return media.stop() }
      } catch {
        status.report(MediaFault(severity: .warning, element: "stream-output", message: "\(error)"), ends: false)
        state.withLock { $0.started = ContinuousClock.now - Self.steadyTime / 2 }
        scheduleReconnection()
      }
    }

    /// Asks the encoder in `branch` for a keyframe each time a caller connects to `sink` (a
    /// listening `srtsink`): the caller starts at once, not at the next of the keyframes that
    /// come every 2 s.
    private func keyframeOnJoin(of sink: Element, encoder branch: Bin) {
      // The branch's output pad, held by the handler (which the sink holds): a wrapper of the
      // branch held weakly is gone once the pipeline is built.
      guard let output = branch.staticPad("src") else { return }
      sink.onSRTCallerAdded { [weak self] in
        self?.state.withLock { $0.callersJoined += 1 }
        VideoEncoder.requestKeyframe(upstreamOf: output)
      }
    }

    /// Sends ``StreamEvent/reconnected(attempt:)`` when the second buffer reaches `sink`: the
    /// first was sent, over a connection (rtmp2sink and a calling srtsink connect when they
    /// start, asynchronously, and fail the first buffer when they cannot), so playing is not
    /// yet connected.
    private func watchConnection(of sink: Element, attempt: Int) {
      let buffers = Locked(0)
      sink.staticPad("sink")?.addProbe(.buffer) { [weak self] _, _ in
        let count = buffers.value.withLock { count in
          count += 1
          return count
        }
        guard count >= 2 else { return .ok }
        self?.status.note(.reconnected(attempt: attempt))
        return .remove
      }
    }

    /// Ends the stream (end-of-stream through the pipeline, waited for up to ``endTime``),
    /// waits `drain` more for the receiver when it passed, then stops.
    func finish(drainingFor drain: Duration) async {
      let media = state.withLock { state in
        state.stopped = true
        return state.media
      }
      track.detach(frames)
      audio?.detach(soundInput)
      if let media, media.fault == nil, let source = frames.source {
        let ended = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let token = media.pipeline.bus.addSyncHandler { message in
          if case .eos = message.kind { ended.continuation.yield() }
        }
        try? source.endOfStream()
        try? sound.source?.endOfStream()
        let drained = await Self.first(of: ended.stream, within: Self.endTime)
        media.pipeline.bus.removeSyncHandler(token)
        if drained && drain > .zero { try? await Task.sleep(for: drain) }
      }
      stop()
    }

    /// Stops at once: the pipeline, and the feeds.
    func stop() {
      let media = state.withLock { state in
        state.stopped = true
        return state.media.take()
      }
      track.detach(frames)
      audio?.detach(soundInput)
      frames.attach(nil)
      sound.attach(nil)
      media?.stop()
    }

    /// Whether `stream` gave a value within `limit`.
    private static func first(of stream: AsyncStream<Void>, within limit: Duration) async -> Bool {
      await withTaskGroup(of: Bool.self) { group in
        group.addTask {
          for await _ in stream { return true }
          return false
        }
        group.addTask {
          try? await Task.sleep(for: limit)
          return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
      }
    }
  }
}

extension GStreamerError {
  /// Whether the pipeline was built but could not start: its sink could not use the address
  /// (in use, not this host's), not a missing element or a chain that does not link.
  fileprivate var isStartFailure: Bool {
    if case .stateChangeFailed = self { true } else { false }
  }
}

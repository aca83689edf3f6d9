import Foundation
import GStreamer
import Synchronization

/// How a ``Recording`` writes its files.
public struct RecordingOptions: Sendable, Hashable {
  /// The container of the segments.
  public enum Format: String, Sendable, Hashable, CaseIterable {
    /// MP4 (`mp4mux`): H.264 and AAC-LC, what every player plays. The media is written as it
    /// comes, and the index (`moov`) rewritten every ``RecordingOptions/indexInterval`` in
    /// space kept for it at the start of the file (splitmuxsink's robust muxing), so the file
    /// plays to its last rewrite after a crash.
    ///
    /// Not fragmented MP4: GStreamer 1.22's `mp4mux` in fragmented mode starts each track of a
    /// file at 0, losing the offset between the first audio and the first frame (up to an
    /// audio frame: 21 ms of AAC), and it put Opus 292 ms early for ffmpeg.
    case mp4
    /// Matroska (`matroskamux`, each block written as it comes, clusters of at most
    /// ``RecordingOptions/indexInterval``): H.264 or VP8, and Opus.
    case mkv
  }

  /// The directory the segments are written in (made when missing).
  public var directory: URL
  /// The container: MP4 by default.
  public var format: Format
  /// How long a segment lasts at most (and half a frame): a new one starts at a keyframe (one a
  /// second when the recording encodes; the sender's when it records frames encoded elsewhere).
  public var segmentDuration: Duration
  /// Segments whose every frame is older than this (last written before) are deleted, checked
  /// as each segment starts; nil keeps them.
  public var keepFor: Duration?
  /// The oldest segments are deleted, as each segment starts, until all of them hold at most
  /// this many bytes (the one being written is never deleted); nil sets no cap.
  public var keepBytes: Int64?
  /// The video codec when the recording encodes: H.264 (x264enc), or VP8 in Matroska.
  public var codec: VideoCodec
  /// The video bitrate and frame rate when the recording encodes; by default the track's size's.
  public var encoding: VideoEncoding?
  /// The audio bitrate when the recording encodes (AAC in MP4, Opus in Matroska).
  public var audioEncoding: AudioEncoding

  /// How often an MP4 file's index is rewritten (and the longest Matroska cluster): the media
  /// since then does not play after a crash.
  ///
  /// What a crash (`kill -9`, a power cut) loses of the segment being written is this, and the
  /// frames since the last keyframe: the segmenter (`splitmuxsink`) holds each keyframe
  /// interval's frames until the next keyframe, to know which segment they go in. A recording
  /// that encodes gives a keyframe every second (and one at each segment's start), so it loses
  /// at most about 1.3 s (measured after `kill -9`: 0.4–1.7 s with 0.5 s here); one of frames
  /// encoded elsewhere loses up to their keyframe interval and this.
  public static let indexInterval = Duration.milliseconds(250)

  /// Options for segments in `directory`; see the properties.
  public init(
    directory: URL, format: Format = .mp4, segmentDuration: Duration = .seconds(60), keepFor: Duration? = nil,
    keepBytes: Int64? = nil, codec: VideoCodec = .h264, encoding: VideoEncoding? = nil,
    audioEncoding: AudioEncoding = .presetMusic
  ) {
    self.directory = directory
    self.format = format
    self.segmentDuration = segmentDuration
    self.keepFor = keepFor
    self.keepBytes = keepBytes
    self.codec = codec
    self.encoding = encoding
    self.audioEncoding = audioEncoding
  }

  /// The audio codec of the format: AAC-LC in MP4, Opus in Matroska.
  var audioCodec: AudioCodec { format == .mp4 ? .aac : .opus }

  /// Checks the options, as ``Recording`` does before it starts.
  /// - Throws: ``RevueError`` `.invalidInput` naming what is wrong.
  func validate(codec: VideoCodec) throws(RevueError) {
    if segmentDuration < .seconds(1) {
      throw RevueError(.invalidInput, "a recording's segments last at least 1 s, not \(segmentDuration)")
    }
    if let keepFor, keepFor <= .zero { throw RevueError(.invalidInput, "the age to keep segments for must be above 0") }
    if let keepBytes, keepBytes <= 0 { throw RevueError(.invalidInput, "the size to keep segments to must be above 0") }
    if format == .mp4 && codec != .h264 {
      throw RevueError(.invalidInput, "\(codec.rawValue) video is recorded in Matroska (mkv), not MP4")
    }
  }
}

/// A local video track, and an audio track if given, recorded to files in segments: MP4
/// (H.264, AAC) or Matroska, each segment starting on a keyframe and named by the UTC time
/// its first frame was captured (`2026-12-07T20-05-00Z.mp4`), with a retention rule that
/// deletes the oldest.
///
///     let recording = try Recording(
///       track: camera, audio: microphone,
///       options: RecordingOptions(directory: URL(fileURLWithPath: "/srv/cam"), segmentDuration: .seconds(60),
///                                 keepFor: .seconds(24 * 3600)))
///
/// Crash-safe: the muxer writes the media as it comes and its index every
/// ``RecordingOptions/indexInterval``, the file sink writes without a buffer of its own, and
/// the encoder gives a keyframe every second, so after a crash (`kill -9`) every finished
/// segment plays and the last one plays up to at most about 1.3 s before it.
///
/// The recording runs in a pipeline of its own, fed like every send pipeline (a `SourceFeed`
/// with capture times), so that audio and video stay in sync in the file. A fault (a full disk,
/// a directory gone, any write error) ends the recording alone, with ``Event/fault(_:)`` and
/// ``Event/state(_:)``: the tracks and their other sinks go on.
public final class Recording: Sendable {
  /// One segment file.
  public struct Segment: Sendable, Hashable {
    /// Its path.
    public var url: URL
    /// Its number in the recording, from 0.
    public var index: Int
    /// When its first frame was captured.
    public var start: Date
  }

  /// A change of the recording.
  public enum Event: Sendable, Hashable {
    /// A segment was started (its file opened).
    case segmentStarted(Segment)
    /// The retention rule deleted an old segment.
    case segmentDeleted(URL)
    /// An element of the recording's pipeline warned or failed (a failure ends the recording:
    /// ``state(_:)`` with ``StreamState/failed(_:)`` follows).
    case fault(MediaFault)
    /// The recording failed or was stopped.
    case state(StreamState)
  }

  /// What the recording has done.
  public struct Statistics: Sendable, Hashable {
    /// Video frames that reached the segmenter (a slow encoder drops frames before it).
    public var framesRecorded: Int
    /// Audio buffers handed to it.
    public var audioBuffersRecorded: Int
    /// Segments started.
    public var segmentsStarted: Int
    /// Segments the retention rule deleted.
    public var segmentsDeleted: Int
  }

  /// The options it records with.
  public let options: RecordingOptions
  /// The video codec in the files.
  public let codec: VideoCodec

  private let pipeline: MediaPipeline
  private let files: SegmentFiles
  /// The feeds into the recording's pipeline: from the tracks, or from an encoder's output.
  let videoFeed: SourceFeed
  let audioFeed: SourceFeed?
  /// What the audio track feeds: ``audioFeed``, or before it the AAC priming's compensation.
  private let audioInput: (any MediaSink)?
  private let tracks: (video: LocalVideoTrack?, audio: LocalAudioTrack?)
  /// The probes that hand another pipeline's encoded frames to ``videoFeed``, removed at the end.
  private let taps = Mutex<[(pad: Pad, id: UInt)]>([])
  /// What lets go of the other sources of encoded media (a broadcast's encoder), at the end.
  private let detachers = Mutex<[@Sendable () -> Void]>([])
  private let broadcast = Broadcast<Event>()
  /// Video frames that reached the segmenter.
  private let framesRecorded = Locked(0)
  private let shared = Mutex(Shared())

  private struct Shared {
    var state = StreamState.running
    var segments: [Segment] = []
    var deleted = 0
  }

  /// Records `track` (and `audio`), encoding them in the recording's own pipeline.
  /// - Throws: ``RevueError``: `.invalidInput` for options that do not fit (VP8 in MP4, a
  ///   segment under 1 s) or a directory that cannot be made; `.gstreamer` when the pipeline
  ///   cannot be built or started.
  public convenience init(
    track: LocalVideoTrack, audio: LocalAudioTrack? = nil, options: RecordingOptions
  ) throws(RevueError) {
    let size = track.publishedSize
    let layer = VideoParameters(dimensions: size, encoding: options.encoding ?? VideoEncoding.forDimensions(size))
    try self.init(
      video: .raw(VideoEncoder(options.codec, layer, scaled: false)), audio: audio.map { _ in .raw },
      options: options, tracks: (track, audio))
  }

  /// Records the frames `publication` sends (its full-size layer's), as its encoder made them:
  /// the camera is encoded once, for the stream and the recording; and `audio`, encoded by the
  /// recording. While it records, the publication's encoder is asked for a keyframe when 0.9 s
  /// passed without one (a segment starts on one, and a crash loses up to a keyframe interval
  /// of frames): the stream gets a keyframe about every second instead of every two.
  /// - Throws: ``RevueError``: `.invalidInput` for a publication that is not an RTP video one,
  ///   or whose codec the format does not take (VP8 in MP4), and as ``init(track:audio:options:)``.
  public convenience init(
    publication: LocalTrackPublication, audio: LocalAudioTrack? = nil, options: RecordingOptions
  ) throws(RevueError) {
    guard let codec = publication.codec, let sender = publication.sender,
      let branch = try? sender.pipeline.pipeline.element(named: "stream0", as: Bin.self),
      let input = branch.element(named: "payloader")?.staticPad("sink")
    else {
      throw RevueError(.invalidInput, "only an RTP video publication's frames are recorded as they are sent")
    }
    try self.init(video: .encoded(codec), audio: audio.map { _ in .raw }, options: options, tracks: (nil, audio))
    tap(input, of: sender.pipeline.pipeline, into: videoFeed, requests: .regularly)
  }

  /// Records what `broadcast` serves, as its encoder made it (its full-size layer): the camera
  /// is encoded once, for the viewers and the recording, and the encoder runs while it records,
  /// whether anyone watches or not. The audio is the broadcast's Opus in Matroska; in MP4 (an
  /// H.264 broadcast) it is `audio`, encoded in AAC by the recording. While it records, the
  /// broadcast's encoder is asked for a keyframe when 0.9 s passed without one, as for
  /// ``init(publication:audio:options:)``: viewers get a keyframe about every second.
  /// - Throws: ``RevueError``: `.invalidInput` for a codec the format does not take (VP8 in
  ///   MP4), and as ``init(track:audio:options:)``.
  public convenience init(
    broadcast: WebRTCBroadcast, audio: LocalAudioTrack? = nil, options: RecordingOptions
  ) throws(RevueError) {
    let encodedAudio = broadcast.hasAudio && options.audioCodec == .opus
    let rawAudio = encodedAudio ? nil : audio
    try self.init(
      video: .encoded(broadcast.codec), audio: encodedAudio ? .encoded : rawAudio.map { _ in .raw },
      options: options, tracks: (nil, rawAudio))
    let video = EncodedInput(feed: videoFeed) { [weak broadcast] in broadcast?.requestKeyframe() }
    let audioOutput = encodedAudio ? audioFeed : nil
    broadcast.addEncodedOutputs(video: video, audio: audioOutput)
    detachers.withLock {
      $0.append { [weak broadcast] in broadcast?.removeEncodedOutputs(video: video, audio: audioOutput) }
    }
  }

  /// Records a stream received over RTP as it came, without decoding and encoding it again:
  /// `video`'s frames as the depayloader gives them, from the first keyframe, and `audio`'s
  /// Opus, in Matroska (Opus in MP4 plays 292 ms early in ffmpeg). Each is timed by when it
  /// left its jitter buffer, which holds both streams as long: they are in sync in the file as
  /// they arrived. A segment starts on the sender's keyframes, so it lasts at least the asked
  /// time, up to a keyframe interval more; and a crash loses up to a keyframe interval. The
  /// sender is asked for a keyframe at once, and every 300 ms until one comes (a PLI, where it
  /// takes RTCP feedback), so that the first segment starts within a round trip or so of the
  /// recording, not a keyframe interval.
  ///
  /// A stream played from a WHEP server (``Room/watch(whep:token:timeout:)``) is recorded the
  /// same way: its frames and Opus as `webrtcbin` gives them to the decoders, from the moment
  /// each decoder is made (at its stream's first packet).
  /// - Throws: ``RevueError``: `.invalidInput` for a track received neither over RTP nor from
  ///   a WHEP server, or for MP4 with audio, and as ``init(track:audio:options:)``.
  public convenience init(
    receiving video: RemoteVideoTrack, audio: RemoteAudioTrack? = nil, options: RecordingOptions
  ) throws(RevueError) {
    /// Where a received medium's encoded input is: a pad now (RTP), or a WHEP stream's decoder
    /// once made.
    enum Source {
      case pad(Pad, of: Pipeline)
      case whep(WHEPSession.Stream)
    }
    let videoSource: Source
    if let receiver = video.receiver as? RTPReceiver,
      let input = receiver.pipeline.pipeline.element(named: "decoder")?.staticPad("sink")
    {
      videoSource = .pad(input, of: receiver.pipeline.pipeline)
    } else if let stream = video.receiver as? WHEPSession.Stream {
      videoSource = .whep(stream)
    } else {
      throw RevueError(.invalidInput, "only a stream received over RTP or WHEP is recorded as it comes")
    }
    var audioSource: Source?
    if let audio {
      let pipeline = audio.receiver.pipeline.pipeline
      if audio.receiver is RTPReceiver,
        let pad = pipeline.elements.first(where: { $0.factoryName == "opusdec" })?.staticPad("sink")
      {
        audioSource = .pad(pad, of: pipeline)
      } else if let stream = audio.receiver as? WHEPSession.Stream {
        audioSource = .whep(stream)
      } else {
        throw RevueError(.invalidInput, "only Opus audio received over RTP or WHEP is recorded as it comes")
      }
      guard options.format == .mkv else {
        throw RevueError(.invalidInput, "received Opus audio is recorded in Matroska (mkv), not MP4")
      }
    }
    try self.init(
      video: .encoded(video.codec), audio: audio.map { _ in .encoded }, options: options, tracks: (nil, nil))
    for (source, feed) in [(videoSource, videoFeed), audioSource.flatMap { s in audioFeed.map { (s, $0) } }]
      .compactMap({ $0 })
    {
      switch source {
      // The sender is asked for its first keyframe (PLIs), so that the first segment starts
      // within a round trip or so of the recording, not up to a keyframe interval later.
      case .pad(let pad, let owner): tap(pad, of: owner, into: feed, requests: feed === videoFeed ? .first : .never)
      case .whep(let stream):
        let owner = stream.pipeline.pipeline
        stream.whenDecoding { [weak self, weak owner] pad in
          guard let self, let owner, self.state == .running else { return }
          self.tap(pad, of: owner, into: feed, requests: feed === self.videoFeed ? .first : .never)
        }
      }
    }
  }

  /// What the recording's pipeline takes as video.
  enum Input: Sendable {
    /// Raw frames, encoded by the recording with this encoder.
    case raw(VideoEncoder)
    /// Frames encoded already in this codec (another pipeline's encoder, or a received stream's
    /// depayloaded frames), recorded as they are.
    case encoded(VideoCodec)
  }

  /// What the recording's pipeline takes as audio.
  enum AudioInput: Sendable {
    /// Raw audio, encoded by the recording in the format's codec.
    case raw
    /// Audio encoded already in the format's codec.
    case encoded
  }

  /// A recording of `input` (and audio when `audio`), fed by ``videoFeed`` and ``audioFeed``;
  /// attached to `tracks` when given.
  init(
    video input: Input, audio: AudioInput?, options: RecordingOptions,
    tracks: (video: LocalVideoTrack?, audio: LocalAudioTrack?)
  ) throws(RevueError) {
    switch input {
    case .raw(let encoder): codec = encoder.codec
    case .encoded(let codec): self.codec = codec
    }
    try options.validate(codec: codec)
    do {
      try FileManager.default.createDirectory(at: options.directory, withIntermediateDirectories: true)
    } catch {
      throw RevueError(
        .invalidInput, "cannot make the recording's directory \(options.directory.path): \(error.localizedDescription)")
    }
    self.options = options
    self.tracks = tracks
    files = SegmentFiles(directory: options.directory, fileExtension: options.format.rawValue)
    let relay = Relay<Recording>()
    pipeline = MediaPipeline(name: "recording") { fault in relay.target?.report(fault) }
    var frameRate: Int?
    if case .raw(let encoder) = input { frameRate = encoder.layer.encoding.maxFps }
    videoFeed = SourceFeed(frameRate: frameRate)
    let audioFeed = audio != nil ? SourceFeed() : nil
    self.audioFeed = audioFeed
    audioInput = audioFeed.map { feed in
      guard audio == .raw, options.audioCodec == .aac else { return feed }
      return PrimedAudio(feed: feed, samples: PrimedAudio.aacPriming)
    }
    do {
      let segments = try makeSegments(frameRate: frameRate)
      var videoChain: ElementChain
      switch input {
      case .raw(var encoder):
        // A keyframe every second: splitmuxsink writes a keyframe interval of frames at once,
        // and a kill loses what it holds.
        encoder.keyframeSeconds = 1
        videoChain = try encoder.chain()
        videoChain.elements.removeLast()
      case .encoded(let codec):
        videoChain = codec == .h264 ? [ElementRecipe("h264parse")] : [ElementRecipe("identity")]
      }
      var source = SourceFeed.source()
      if case .encoded = input {
        // Encoded frames are not dropped when the recording falls behind for a moment (each
        // depends on the one before): up to 4 s of them wait.
        source.set("max-buffers", .int(120))
      }
      let video = try pipeline.addMedia(from: videoFeed, source: source, branches: [("video", videoChain)])[0]
      let output = video.staticPad("src")
      try output?.link(try segments.requestPad("video"))
      let recorded = framesRecorded
      output?.addProbe(.buffer) { _, _ in
        recorded.value.withLock { $0 += 1 }
        return .ok
      }
      if let audioFeed {
        var audioChain: ElementChain
        if audio == .raw {
          audioChain = AudioEncoder(encoding: options.audioEncoding, dtx: false, codec: options.audioCodec).chain()
          audioChain.elements.removeLast()
        } else {
          audioChain = options.audioCodec == .aac ? [ElementRecipe("aacparse")] : [ElementRecipe("opusparse")]
        }
        var audioSource = SourceFeed.source(named: "audiosource", audio: true)
        if audio == .encoded {
          // As encoded frames: none dropped when the recording falls behind for a moment (a
          // packet dropped is a gap in the file's audio); up to 4 s of 20 ms packets wait.
          audioSource.set("max-buffers", .int(200))
        }
        let branch = try pipeline.addMedia(
          from: audioFeed, source: audioSource, branches: [("audio", audioChain)])[0]
        try branch.staticPad("src")?.link(try segments.requestPad("audio_%u"))
      }
      relay.target = self
      try pipeline.play()
    } catch {
      pipeline.stop()
      throw RevueError(.gstreamer, "cannot start the recording", underlying: error)
    }
    tracks.video?.attach(videoFeed)
    if let audioInput { tracks.audio?.attach(audioInput) }
  }

  deinit {
    detach()
    pipeline.stop()
  }

  /// The `splitmuxsink` that cuts the segments, its muxer and file sink, in the pipeline.
  ///
  /// A segment ends at the last keyframe within its length and half a frame (at `frameRate`;
  /// 20 ms when unknown): the recording's encoder gives one every second, so 2 s segments hold
  /// two keyframe intervals, whose frames' times may be a little late. The segmenter does not
  /// ask the encoder for keyframes of its own: one asked for at the end of a segment came a
  /// frame late now and then, the two intervals no longer fitted, and the segment held one.
  private func makeSegments(frameRate: Int?) throws(GStreamerError) -> Element {
    let nanoseconds =
      UInt(options.segmentDuration / .nanoseconds(1)) + UInt(frameRate.map { 500_000_000 / max(1, $0) } ?? 20_000_000)
    let fragment = RecordingOptions.indexInterval
    let muxer =
      switch options.format {
      case .mp4:
        // The index (moov) is rewritten in space kept for it at the start of the file, every
        // index interval, for a segment up to twice as long as asked (a longer one starts a
        // new file, splitmuxsink's robust muxing).
        ElementRecipe(
          "mp4mux", name: "muxer",
          [
            "reserved-moov-update-period": .uint(UInt(fragment / .nanoseconds(1))),
            "reserved-max-duration": .uint(nanoseconds * 2),
          ])
      case .mkv:
        ElementRecipe("matroskamux", name: "muxer", ["max-cluster-duration": .int(Int(fragment / .nanoseconds(1)))])
      }
    let segments = try ElementRecipe(
      "splitmuxsink", name: "segments",
      [
        "max-size-time": .uint(nanoseconds),
        "use-robust-muxing": .bool(options.format == .mp4),
        // Written as it comes: nothing a crash would lose waits in a buffer of the sink's.
        "sink": .object(
          try ElementRecipe("filesink", name: "file", ["buffer-mode": .enumeration("unbuffered")]).make()),
        "muxer": .object(try muxer.make()),
      ]
    ).make()
    try pipeline.pipeline.add(segments)
    let owner = pipeline.pipeline
    segments.nameSplitFiles { [weak self, weak owner] index, first in
      guard let self else { return nil }
      var start = Date()
      if let owner, let pts = first?.buffer?.pts, let running = first?.runningTime(of: pts) {
        let captured = running.nanoseconds &+ owner.baseTime.nanoseconds
        let now = Clock.system.time.nanoseconds
        if now >= captured { start = Date(timeIntervalSinceNow: -Double(now - captured) / 1e9) }
      }
      return self.started(index: index, at: start).path
    }
    return segments
  }

  /// A segment starts at `start`: its path, the event, and the retention rule applied.
  private func started(index: Int, at start: Date) -> URL {
    let url = files.path(startingAt: start)
    let segment = Segment(url: url, index: index, start: start)
    shared.withLock { $0.segments.append(segment) }
    RevueLog.log(.info, "Recording", "segment \(index): \(url.path)")
    broadcast.send(.segmentStarted(segment))
    if options.keepFor != nil || options.keepBytes != nil {
      let deleted = files.applyRetention(age: options.keepFor, bytes: options.keepBytes, current: url)
      shared.withLock { $0.deleted += deleted.count }
      for url in deleted { broadcast.send(.segmentDeleted(url)) }
    }
    return url
  }

  /// Hands the encoded frames that pass `pad` (a payloader's or decoder's sink pad in `owner`)
  /// to `feed` from the first keyframe on, each with its capture time (its running time
  /// there plus `owner`'s base time), asking upstream for keyframes as `requests` says
  /// (`EncodedInput`): an encoder of this node's, or a sender (as a PLI).
  func tap(_ pad: Pad, of owner: Pipeline, into feed: SourceFeed, requests: EncodedInput.Requests = .never) {
    let input = EncodedInput(feed: feed, requests: requests) { [weak pad] in
      guard let upstream = pad?.peer else { return }
      guard requests == .first else { return VideoEncoder.requestKeyframe(upstreamOf: upstream) }
      // A received stream's request goes up through the jitter buffer and RTP session from
      // another thread: sent from the streaming thread, inside this probe, the WHEP receiver's
      // stream stopped now and then (49 packets in 5 s, in 2 of 10 runs).
      DispatchQueue.global().async { VideoEncoder.requestKeyframe(upstreamOf: upstream) }
    }
    let id = pad.addProbe(.buffer) { [weak owner] pad, info in
      guard let owner, let buffer = info.buffer, let pts = buffer.pts, let running = pad.runningTime(of: pts),
        let caps = pad.currentCaps
      else { return .ok }
      input.send(
        buffer, caps: caps, capturedAt: ClockTime(nanoseconds: running.nanoseconds &+ owner.baseTime.nanoseconds))
      return .ok
    }
    if let id { taps.withLock { $0.append((pad, id)) } }
  }

  /// The pipeline's fault: sent, and an error ends the recording (the tracks go on).
  private func report(_ fault: MediaFault) {
    RevueLog.log(fault.severity == .error ? .error : .warning, "Recording", "\(fault)")
    broadcast.send(.fault(fault))
    guard fault.severity == .error else { return }
    detach()
    end(.failed(fault))
  }

  private func end(_ state: StreamState) {
    let changed = shared.withLock { shared in
      guard shared.state == .running else { return false }
      shared.state = state
      return true
    }
    if changed { broadcast.send(.state(state)) }
  }

  private func detach() {
    tracks.video?.detach(videoFeed)
    if let audioInput { tracks.audio?.detach(audioInput) }
    let taps = taps.withLock { taps in
      defer { taps = [] }
      return taps
    }
    for (pad, id) in taps { pad.removeProbe(id) }
    let detachers = detachers.withLock { detachers in
      defer { detachers = [] }
      return detachers
    }
    for detach in detachers { detach() }
  }

  /// The recording's changes from now on.
  public var events: AsyncStream<Event> { broadcast.subscribe() }

  /// Whether it records, failed (a write error, a full disk) or was stopped.
  public var state: StreamState { shared.withLock { $0.state } }

  /// The segments started so far, the first first (some may have been deleted since).
  public var segments: [Segment] { shared.withLock { $0.segments } }

  /// What it has done so far.
  public var statistics: Statistics {
    let (started, deleted) = shared.withLock { ($0.segments.count, $0.deleted) }
    return Statistics(
      framesRecorded: framesRecorded.value.withLock { $0 }, audioBuffersRecorded: audioFeed?.framesSent ?? 0,
      segmentsStarted: started, segmentsDeleted: deleted)
  }

  /// Stops recording: the tracks are let go, the last segment is finished (its media written
  /// to the end) within `timeout`, and the pipeline stopped.
  public func stop(timeout: Duration = .seconds(3)) async {
    detach()
    if state == .running {
      // Subscribed before the end is sent, so that it cannot pass unseen.
      let messages = pipeline.pipeline.bus.messages([.eos, .error])
      let sources = [videoFeed.source, audioFeed?.source].compactMap { $0 }
      for feed in [videoFeed, audioFeed].compactMap({ $0 }) { feed.attach(nil) }
      for source in sources { try? source.endOfStream() }
      await Self.firstEndOrError(of: messages, within: timeout)
    }
    pipeline.stop()
    end(.stopped)
    broadcast.finish()
  }

  /// Waits until `messages` brings the end of the stream or an error, or `timeout` passes.
  private static func firstEndOrError(of messages: AsyncStream<Message>, within timeout: Duration) async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        for await message in messages {
          switch message.kind {
          case .eos, .error: return
          default: continue
          }
        }
      }
      group.addTask { try? await Task.sleep(for: timeout) }
      await group.next()
      group.cancelAll()
    }
  }
}

/// Encoded frames handed on to a recording's feed from the first keyframe on (a segment
/// starts on one). Asking regularly, it asks the encoder for a keyframe at once, and then
/// when 0.9 s of frames passed without one: two such keyframe intervals fit in 2 s, which the
/// segmenter cuts at (at 1 s, each one a frame or two late, a segment of 2 s held one).
final class EncodedInput: MediaSink {
  /// When it asks for keyframes.
  enum Requests: Sendable {
    /// Never: it takes them as they come.
    case never
    /// Until the first keyframe, every ``EncodedInput/firstDelay`` (a received stream's sender
    /// is asked, as a viewer's PLI).
    case first
    /// For the first frame, then when 0.9 s passed without one (an encoder of this node's).
    case regularly
  }

  /// The recording's feed.
  let feed: SourceFeed
  /// When it asks for keyframes.
  let requests: Requests
  /// Asks the encoder for a keyframe.
  private let requestKeyframe: @Sendable () -> Void
  /// The capture time of the first frame, of the last keyframe (nil before the first), and of
  /// the last request.
  private let keyframes = Mutex<(first: UInt64?, last: UInt64?, asked: UInt64?)>((nil, nil, nil))
  /// How often a received stream's sender is asked for its first keyframe: past a sender's
  /// 250 ms between two keyframes answered.
  static let firstDelay: UInt64 = 300_000_000
  /// The longest the recording lets go without a keyframe before it asks for one.
  static let interval: UInt64 = 900_000_000

  init(feed: SourceFeed, requests: Requests = .regularly, requestKeyframe: @escaping @Sendable () -> Void) {
    self.feed = feed
    self.requests = requests
    self.requestKeyframe = requestKeyframe
  }

  func send(_ buffer: Buffer, caps: Caps, capturedAt captured: ClockTime?) {
    let time = captured?.nanoseconds ?? Clock.system.time.nanoseconds
    let isKeyframe = !buffer.flags.contains(.deltaUnit)
    let (started, ask) = keyframes.withLock { keyframes -> (Bool, Bool) in
      if keyframes.first == nil { keyframes.first = time }
      if isKeyframe { keyframes.last = time }
      let due =
        switch requests {
        case .never: false
        // At once, and again every 300 ms until one comes: a sender drops a request within
        // 250 ms of the last it answered (a WHEP server's keyframe for the viewer that joined),
        // and the first segment then waited for its next keyframe (2 s: 92 of 152 frames filed).
        case .first: keyframes.last == nil && keyframes.asked.map { time >= $0 + Self.firstDelay } ?? true
        case .regularly:
          time >= (keyframes.asked ?? 0) + Self.interval / 2
            && keyframes.last.map({ time >= $0 + Self.interval }) ?? true
        }
      guard due, !isKeyframe else { return (keyframes.last != nil, false) }
      keyframes.asked = time
      return (keyframes.last != nil, true)
    }
    if started { feed.send(buffer, caps: caps, capturedAt: ClockTime(nanoseconds: time)) }
    if ask { requestKeyframe() }
  }

  func signal(muted: Bool) {}
}

/// Audio handed on to a feed as if captured `samples` earlier than it was. An AAC encoder puts
/// that many samples (its priming: 1024 for `avenc_aac`) before the first one it was given,
/// and MP4 players play them, unless the file says to skip them, which `mp4mux` does not
/// write: each beep of the sync signal came 21.3 ms after its flash (measured with ffmpeg).
/// Stamped earlier by as much, the audio plays when it was captured (measured: 0–1 ms).
final class PrimedAudio: MediaSink {
  /// The feed of the encoder.
  let feed: SourceFeed
  /// The encoder's priming, in samples.
  let samples: Int

  /// `avenc_aac`'s priming (ffmpeg's AAC encoder's `initial_padding`).
  static let aacPriming = 1024

  init(feed: SourceFeed, samples: Int) {
    self.feed = feed
    self.samples = samples
  }

  func send(_ buffer: Buffer, caps: Caps, capturedAt captured: ClockTime?) {
    let rate = UInt64(max(1, caps.count > 0 ? caps.structure(at: 0).get("rate", as: Int.self) ?? 48_000 : 48_000))
    let shift = UInt64(samples) * 1_000_000_000 / rate
    let earlier = captured.map { ClockTime(nanoseconds: $0.nanoseconds > shift ? $0.nanoseconds - shift : 0) }
    // Audio from before the pipeline's start is dropped, not stamped as its start: the encoder
    // counts the samples from its first buffer on, and the first segment's audio came 4–8 ms late.
    if let earlier, let source = feed.source, source.currentState == .playing, earlier < source.baseTime { return }
    feed.send(buffer, caps: caps, capturedAt: earlier)
  }

  func signal(muted: Bool) { feed.signal(muted: muted) }
}

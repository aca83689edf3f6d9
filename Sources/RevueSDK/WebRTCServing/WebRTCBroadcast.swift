import Foundation
import GStreamer
import Synchronization

/// A local video track, and an audio track if given, served to WebRTC viewers straight from this
/// node, as MediaMTX and go2rtc serve theirs: browsers, and any WHEP player (the IETF WHEP
/// draft: OBS's and MediaMTX's readers, `whepsrc`), each its own WebRTC session (`webrtcbin`:
/// ICE, DTLS-SRTP, NACKs answered with retransmissions, keyframe requests answered), all fed
/// from one encoder.
///
///     let broadcast = try WebRTCBroadcast(track: camera, audio: microphone, port: 8889)
///     print(broadcast.whepURL)  // http://127.0.0.1:8889/camera/whep
///
/// The HTTP exchange (WHEP): a viewer POSTs its offer (`application/sdp`, receive-only video
/// and audio) to ``whepURL``, with the token as `Authorization: Bearer` when the broadcast has
/// one; the answer (`201 Created`, every candidate in it: no trickle) carries the session's URL
/// in `Location`, which a `DELETE` ends. Any origin may watch (`OPTIONS` answers CORS), so that
/// other pages can play it. A viewer that vanishes (a tab closed, a network gone) is ended when
/// its RTCP stops for 3 s. A wrong token gets `401`, a malformed offer `400` with a one-line
/// reason; neither leaves anything behind.
///
/// The encoders run while at least one viewer watches (or a ``Recording`` of the broadcast
/// records what they are sent); each new viewer gets a keyframe at once,
/// and keyframe requests (PLI, FIR) reach the encoder at most every 250 ms whatever the number
/// of viewers. A viewer's fault ends that viewer alone; the encoder's reaches ``events``.
///
/// With simulcast, smaller layers are encoded beside the full size (one encoder each), and each
/// viewer is sent the largest its own path carries (`ViewerLayerChoice`), switched at the
/// layer's keyframes (`LayerSwitch`).
public final class WebRTCBroadcast: Sendable {
  /// What the broadcast has done.
  public struct Statistics: Sendable, Hashable {
    /// Frames the track gave to the encoder (only while someone watches).
    public var framesSent: Int
    /// Audio buffers the audio track gave to its encoder.
    public var audioBuffersSent: Int
    /// Viewers watching now.
    public var viewers: Int
    /// Viewers that connected so far.
    public var viewersConnected: Int
    /// Offers refused so far: a wrong token, a malformed or unsuitable offer, too many viewers.
    public var offersRefused: Int
    /// Keyframe requests: a new viewer's, and its RTCP PLI and FIR (and a recording's, about
    /// one a second while one records).
    public var keyframeRequests: Int
    /// Of those, the ones passed to the encoder (one within 250 ms of the last is dropped: the
    /// keyframe it asks for is on its way to every viewer).
    public var keyframeRequestsHonoured: Int
  }

  /// One viewer's session now.
  public struct ViewerStatistics: Sendable, Hashable {
    /// The session's id: the last part of its URL (the `Location` its offer was answered with).
    public var id: String
    /// When its offer was answered.
    public var connected: Date
    /// Video frames handed to its session.
    public var framesSent: Int
    /// Audio buffers handed to its session (none when it takes no audio).
    public var audioBuffersSent: Int
    /// Its WebRTC connection's state: `connected` while it watches.
    public var connectionState: String
    /// The simulcast layer it is sent (0: the full size, 1 the next smaller…; always 0 without
    /// simulcast).
    public var layer: Int
    /// That layer's size.
    public var dimensions: Dimensions
    /// The bitrate its session's congestion control aims at, from its receiver reports (nil
    /// without simulcast: then every viewer is sent the one layer at its bitrate).
    public var targetBitrate: Int?
  }

  /// Viewers served at once at most: each costs a `webrtcbin` and its threads.
  public static let maxViewers = 16

  /// Where WHEP players POST their offers: `http://HOST:PORT/PATH/whep`.
  public let whepURL: URL
  /// The page to watch on, when the broadcast serves one: `http://HOST:PORT/PATH/`.
  public let pageURL: URL
  /// The port the HTTP server listens on.
  public let port: Int
  /// The codec the video is encoded with.
  public let codec: VideoCodec

  private let http: HTTPServer
  private let encoder: Encoder
  private let status: StreamStatus
  private let shared = Mutex(Shared())
  private let track: LocalVideoTrack
  private let audio: LocalAudioTrack?
  private let viewerCounts = Broadcast<Int>()

  /// The number of viewers at each change from now on: one connected, one gone (its `DELETE`,
  /// its connection failed, or its RTCP stopped for 3 s).
  public var viewerChanges: AsyncStream<Int> { viewerCounts.subscribe() }

  /// With simulcast, each viewer's switch to another layer from now on, as the new layer's
  /// first frame goes to it: its session then (``ViewerStatistics/layer``).
  public var layerChanges: AsyncStream<ViewerStatistics> { layerSwitches.subscribe() }
  private let layerSwitches = Broadcast<ViewerStatistics>()

  private struct Shared {
    var viewers: [String: Viewer] = [:]
    /// Viewers whose offer is being answered.
    var connecting = 0
    var connected = 0
    var refused = 0
    var stopped = false
    /// The number of viewers ``viewerChanges`` last told.
    var told = 0
    /// Sinks of the encoded media beside the viewers' (a recording), which keep the encoder fed.
    var recorders = 0
  }

  /// Serves `track` (and `audio`) to WebRTC viewers at `http://address:port/path/whep`.
  /// - Parameters:
  ///   - address: the address to listen on: loopback by default (this machine's viewers only);
  ///     `0.0.0.0` for every address (give a `token` then).
  ///   - port: the HTTP port; 8889 by default (MediaMTX's), 0 for any free one (see ``port``).
  ///   - path: the stream's path, from `/`.
  ///   - codec: VP8 (every browser decodes it) by default, or H.264 (constrained baseline).
  ///   - encoding: the bitrate and frame rate; by default the track's size's, at 30 fps.
  ///   - track: the video track served.
  ///   - simulcast: whether smaller layers are encoded beside the full size (LiveKit's: a
  ///     720p track gets 360p and 180p too), and each viewer is sent the largest its path
  ///     carries, as the congestion control of its own session judges from its receiver reports
  ///     (``ViewerStatistics/layer``); off by default: one encoder, the full size for everyone.
  ///   - audio: an audio track to serve beside the video, in Opus at `audioEncoding`'s bitrate.
  ///   - audioEncoding: the audio's bitrate.
  ///   - token: the bearer token viewers must give (`Authorization: Bearer TOKEN`); nil lets
  ///     anyone watch.
  ///   - page: an HTML page served at `/` and at `path/`, where `__WHEP_ENDPOINT__` stands for
  ///     the WHEP path (the node's page to watch on); nil serves none.
  /// - Throws: ``RevueError``: `.invalidInput` for a path that does not start with `/` or an
  ///   address the server cannot listen on; `.gstreamer` when the encoder cannot be built.
  public init(
    track: LocalVideoTrack, address: String = "127.0.0.1", port: Int = 8889, path: String = "/camera",
    codec: VideoCodec = .vp8, encoding: VideoEncoding? = nil, simulcast: Bool = false, audio: LocalAudioTrack? = nil,
    audioEncoding: AudioEncoding = .presetMusic, token: String? = nil, page: String? = nil
  ) throws(RevueError) {
    guard path.hasPrefix("/"), path.count > 1, !path.hasSuffix("/"),
      path.allSatisfy({ $0.isLetter || $0.isNumber || "/-_.~".contains($0) })
    else {
      throw RevueError(
        .invalidInput, "the WHEP path '\(path)' must start with /, not end with / and hold only A-Z a-z 0-9 - _ . ~ /")
    }
    let layers = VideoPublishOptions(encoding: encoding, simulcast: simulcast).layers(for: track.publishedSize)
    let status = StreamStatus(name: "the WebRTC broadcast of \(track.name)")
    self.status = status
    encoder = try Encoder(
      video: layers.enumerated().map { VideoEncoder(codec, $1, scaled: $0 > 0) },
      audio: audio.map { _ in AudioEncoder(encoding: audioEncoding, dtx: false) },
      status: status)
    self.codec = codec
    self.track = track
    self.audio = audio
    let routes = Routes(path: path, token: token, page: page)
    let served = Relay<WebRTCBroadcast>()
    do {
      http = try HTTPServer(address: address, port: port) { request in
        guard let broadcast = served.target else { return .text(503, "the broadcast has stopped") }
        return await broadcast.answer(request, routes: routes)
      }
    } catch {
      encoder.stop()
      throw error
    }
    self.port = http.port
    let host = ["0.0.0.0", "::", ""].contains(address) ? ProcessInfo.processInfo.hostName : address
    let base = "http://\(host.contains(":") ? "[\(host)]" : host):\(http.port)"
    whepURL = URL(string: base + routes.whep)!
    pageURL = URL(string: base + path + "/")!
    track.attach(encoder.videoInput)
    audio?.attach(encoder.audioInput)
    served.target = self
  }

  deinit { stop() }

  /// Whether the broadcast serves (a viewer's fault does not end it) or was stopped.
  public var state: StreamState { status.state }

  /// The broadcast's changes from now on: its encoder's faults, and its end.
  public var events: AsyncStream<StreamEvent> { status.events }

  /// What the broadcast has done so far.
  public var statistics: Statistics {
    let (viewers, connected, refused) = shared.withLock { ($0.viewers.count, $0.connected, $0.refused) }
    let requests = encoder.keyframeRequests
    return Statistics(
      framesSent: encoder.videoInput.framesSent, audioBuffersSent: encoder.audioInput.framesSent, viewers: viewers,
      viewersConnected: connected, offersRefused: refused, keyframeRequests: requests.received,
      keyframeRequestsHonoured: requests.honoured)
  }

  /// Each viewer's session now, the earliest first.
  public var viewers: [ViewerStatistics] {
    shared.withLock { Array($0.viewers.values) }.map(\.statistics).sorted { $0.connected < $1.connected }
  }

  /// Ends every viewer's session and stops serving; the tracks go on.
  public func stop() {
    http.stop()
    track.detach(encoder.videoInput)
    audio?.detach(encoder.audioInput)
    let viewers = shared.withLock { state in
      state.stopped = true
      defer { state.viewers = [:] }
      return Array(state.viewers.values)
    }
    for viewer in viewers { viewer.end() }
    encoder.stop()
    status.stopped()
  }

  // MARK: - HTTP

  /// The paths the broadcast answers.
  struct Routes: Sendable {
    /// The stream's path, `/camera`.
    let path: String
    /// Its WHEP endpoint, `/camera/whep`.
    var whep: String { path + "/whep" }
    let token: String?
    let page: String?

    /// The session id in `requestPath` when it is a session's URL (`/camera/whep/ID`).
    func session(in requestPath: String) -> String? {
      guard let (id, rest) = resource(in: requestPath), rest.isEmpty else { return nil }
      return id
    }

    /// The session id and the rest of `requestPath` when it is a session's URL or one under it
    /// (`/camera/whep/ID/layer`: `ID`, `layer`).
    func resource(in requestPath: String) -> (id: String, rest: String)? {
      guard requestPath.hasPrefix(whep + "/") else { return nil }
      let parts = requestPath.dropFirst(whep.count + 1).split(
        separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
      guard let id = parts.first, !id.isEmpty else { return nil }
      return (String(id), parts.count > 1 ? String(parts[1]) : "")
    }

    /// Whether `request` carries the token (always, without one), compared in a time that does
    /// not depend on where they differ.
    func authorizes(_ request: HTTPServer.Request) -> Bool {
      guard let token else { return true }
      let given = Array((request.headers["authorization"] ?? "").utf8)
      let expected = Array(("Bearer " + token).utf8)
      var difference = given.count ^ expected.count
      for index in expected.indices { difference |= Int(expected[index] ^ (index < given.count ? given[index] : 0)) }
      return difference == 0
    }
  }

  /// Header fields that let pages of other origins play the stream (CORS).
  private static let crossOrigin: [(String, String)] = [
    ("Access-Control-Allow-Origin", "*"), ("Access-Control-Expose-Headers", "Location, Link"),
  ]

  private func answer(_ request: HTTPServer.Request, routes: Routes) async -> HTTPServer.Response {
    var response = await route(request, routes: routes)
    response.headers += Self.crossOrigin
    return response
  }

  private func route(_ request: HTTPServer.Request, routes: Routes) async -> HTTPServer.Response {
    let unauthorized = HTTPServer.Response.text(
      401, "a bearer token is needed: Authorization: Bearer TOKEN", headers: [("WWW-Authenticate", "Bearer")])
    switch (request.method, request.path) {
    case ("OPTIONS", _):
      return HTTPServer.Response(
        status: 204,
        headers: [
          ("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"),
          ("Access-Control-Allow-Headers", "Authorization, Content-Type"), ("Access-Control-Max-Age", "600"),
          ("Accept-Post", "application/sdp"),
        ])
    case ("GET", "/"), ("GET", routes.path), ("GET", routes.path + "/"):
      guard let page = routes.page else { return .text(404, "no page here: WHEP players POST to \(routes.whep)") }
      let html = page.replacingOccurrences(of: "__WHEP_ENDPOINT__", with: routes.whep)
      return HTTPServer.Response(
        status: 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-cache")],
        body: Data(html.utf8))
    case ("POST", routes.whep):
      guard routes.authorizes(request) else {
        refused()
        return unauthorized
      }
      let type = request.headers["content-type"]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
      guard type?.lowercased() == "application/sdp" else {
        refused()
        return .text(415, "the offer must be sent as Content-Type: application/sdp")
      }
      guard let offer = String(data: request.body, encoding: .utf8) else {
        refused()
        return .text(400, "the offer is not UTF-8 text")
      }
      return await connect(offer: offer, routes: routes)
    case ("DELETE", _) where routes.session(in: request.path) != nil:
      guard routes.authorizes(request) else { return unauthorized }
      let id = routes.session(in: request.path)!
      guard let viewer = shared.withLock({ $0.viewers.removeValue(forKey: id) }) else {
        return .text(404, "no such session")
      }
      viewer.end()
      updateWatched()
      return HTTPServer.Response(status: 200)
    case ("PATCH", _) where routes.session(in: request.path) != nil:
      return .text(405, "trickle ICE is not taken: the answer holds every candidate", headers: [("Allow", "DELETE")])
    case (_, _) where routes.resource(in: request.path).map({ LayerSelection.paths.contains($0.rest) }) == true:
      guard routes.authorizes(request) else { return unauthorized }
      let (id, rest) = routes.resource(in: request.path)!
      guard let viewer = shared.withLock({ $0.viewers[id] }), viewer.layers.count > 1 else {
        return .text(404, "no such session, or one without simulcast layers")
      }
      return LayerSelection.answer(request, at: rest, for: viewer, session: routes.whep + "/" + id)
    case (_, routes.whep):
      return .text(405, "POST an SDP offer here", headers: [("Allow", "POST, OPTIONS")])
    default:
      return .text(404, "nothing at \(request.path.prefix(100)): WHEP players POST to \(routes.whep)")
    }
  }

  private func refused() { shared.withLock { $0.refused += 1 } }

  /// Answers `offer` with a new viewer's session, or a refusal.
  private func connect(offer: String, routes: Routes) async -> HTTPServer.Response {
    let media: [SDPMedia]
    do {
      media = try SDPMedia.parse(offer, preferring: codec, bundled: true)
    } catch {
      refused()
      return .text(400, "malformed offer: \(error.message)")
    }
    guard let video = media.first(where: { if case .video(codec) = $0.kind { true } else { false } }) else {
      refused()
      return .text(400, "the offer takes no \(codec.rawValue) video")
    }
    let opus = audio == nil ? nil : media.first { if case .opus = $0.kind { true } else { false } }
    let id = UUID().uuidString.lowercased()
    let admitted = shared.withLock { state in
      guard state.viewers.count + state.connecting < Self.maxViewers else { return false }
      state.connecting += 1
      return true
    }
    guard admitted else {
      refused()
      return .text(503, "\(Self.maxViewers) viewers watch already")
    }
    updateWatched()
    defer { updateWatched() }
    let answer: String
    var viewer: Viewer?
    do {
      let made = try Viewer(
        id: id, codec: codec, video: (encoder.video, video.payloadTypes.media),
        mediaId: String(media.firstIndex(of: video) ?? 0), layers: encoder.layers,
        audio: opus.map { (encoder.audio, $0.payloadTypes.media) },
        ended: { [weak self] viewer in self?.remove(viewer) },
        switched: { [weak self] viewer in self?.layerSwitches.send(viewer.statistics) },
        keyframe: { [weak self] layer, joining in self?.encoder.requestKeyframe(layer: layer, joining: joining) })
      viewer = made
      answer = try await made.answer(offer, timeout: .seconds(5))
    } catch {
      viewer?.end()
      shared.withLock { state in
        state.connecting -= 1
        state.refused += 1
      }
      return .text(400, "cannot answer the offer: \(error.message)")
    }
    let open = shared.withLock { state in
      state.connecting -= 1
      // A viewer whose pipeline failed while its offer was answered has ended already.
      guard !state.stopped, viewer?.hasEnded == false else { return false }
      state.viewers[id] = viewer
      state.connected += 1
      return true
    }
    guard open else {
      viewer?.end()
      return .text(503, "the broadcast has stopped, or the viewer's session failed")
    }
    viewer?.startWatching()
    let location = routes.whep + "/" + id
    return HTTPServer.Response(
      status: 201,
      headers: [("Content-Type", "application/sdp"), ("Location", location)]
        + (encoder.layers.count > 1 ? LayerSelection.links(session: location) : []),
      body: Data(answer.utf8))
  }

  /// Forgets `viewer` (its session ended by itself).
  private func remove(_ viewer: Viewer) {
    shared.withLock { state in
      if state.viewers[viewer.id] === viewer { state.viewers[viewer.id] = nil }
    }
    updateWatched()
  }

  /// Runs the encoder while a viewer watches or connects, and idles it otherwise; tells
  /// ``viewerChanges`` of a new number of viewers.
  private func updateWatched() {
    let (watched, changed): (Bool, Int?) = shared.withLock { state in
      let count = state.viewers.count
      defer { state.told = count }
      return (
        !state.stopped && (state.connecting > 0 || count > 0 || state.recorders > 0), state.told == count ? nil : count
      )
    }
    encoder.feed(watched)
    if let changed { viewerCounts.send(changed) }
  }

  // MARK: - Encoded outputs

  /// Hands the full-size layer's encoded frames to `video`, and the encoded audio (Opus, when
  /// the broadcast has audio) to `audio`, each with its capture time, from now on; the
  /// encoders run while they are attached, whether anyone watches or not. A recording of what
  /// is served takes them this way: the camera is encoded once.
  func addEncodedOutputs(video: any MediaSink, audio: (any MediaSink)?) {
    encoder.video[0].add(video)
    if let audio { encoder.audio.add(audio) }
    shared.withLock { $0.recorders += 1 }
    updateWatched()
  }

  /// Stops handing the encoded media to `video` and `audio` (as given to
  /// `addEncodedOutputs(video:audio:)`).
  func removeEncodedOutputs(video: any MediaSink, audio: (any MediaSink)?) {
    encoder.video[0].remove(video)
    if let audio { encoder.audio.remove(audio) }
    shared.withLock { $0.recorders = max(0, $0.recorders - 1) }
    updateWatched()
  }

  /// Asks the full-size layer's encoder for a keyframe (dropped within 250 ms of the last one
  /// asked for: that one is on its way), as a viewer's PLI does.
  func requestKeyframe() { encoder.requestKeyframe(layer: 0, joining: false) }

  /// Whether the encoded audio goes to encoded outputs: the broadcast has audio.
  var hasAudio: Bool { audio != nil }

  // MARK: - The encoder

  /// The encoders of the broadcast: the track's frames (and audio) encoded once (once per
  /// simulcast layer), each encoded frame handed to every viewer's session (of that layer) with
  /// its capture time.
  final class Encoder: Sendable {
    /// One medium's encoded frames (one layer's, or the audio's), and the viewers' sinks they go to.
    final class Medium: Sendable {
      private let outputs = Mutex<[ObjectIdentifier: any MediaSink]>([:])

      /// Sends the medium's encoded frames to `output` from now on.
      func add(_ output: any MediaSink) { outputs.withLock { $0[ObjectIdentifier(output)] = output } }
      /// Stops sending them to `output`.
      func remove(_ output: any MediaSink) { outputs.withLock { $0[ObjectIdentifier(output)] = nil } }

      /// Hands an encoded frame, captured at `captured`, to every viewer.
      func deliver(_ buffer: Buffer, caps: Caps, captured: ClockTime?) {
        for output in outputs.withLock({ Array($0.values) }) { output.send(buffer, caps: caps, capturedAt: captured) }
      }
    }

    let pipeline: MediaPipeline
    /// The track's frames into the encoders.
    let videoInput: SourceFeed
    /// The audio track's buffers into its encoder.
    let audioInput = SourceFeed()
    /// Each layer's encoded frames, the full size first.
    let video: [Medium]
    /// The encoded audio.
    let audio = Medium()
    /// The layers, the full size first.
    let layers: [VideoParameters]
    /// The pipeline's sources, the video's first, which the media feed while someone watches.
    private let sources: [AppSrc]
    /// Keyframe requests to each layer's encoder, limited.
    private let keyframes: [KeyframeLimiter]

    /// Encoders of `encoders`' layers (the full size first; the others scaled from it) and of
    /// the audio, in a pipeline that reports its faults to `status`.
    init(video encoders: [VideoEncoder], audio audioEncoder: AudioEncoder?, status: StreamStatus) throws(RevueError) {
      videoInput = SourceFeed(frameRate: encoders[0].layer.encoding.maxFps)
      video = encoders.map { _ in Medium() }
      layers = encoders.map(\.layer)
      pipeline = MediaPipeline(name: "webrtc-encoder") { fault in status.report(fault) }
      do {
        let branches = try encoders.enumerated().map { index, encoder throws(GStreamerError) in
          var chain = try encoder.chain()
          // Each viewer payloads the frames with its own payload type. H.264 goes as a byte
          // stream, its parameter sets before each keyframe: as `avc` (what h264parse makes for
          // an appsink) the viewers' rtph264pay refused the caps ("failed to set sps/pps").
          chain.elements.removeLast()
          if encoder.codec == .h264 {
            chain.elements.append(try .caps("video/x-h264", ["stream-format": "byte-stream", "alignment": "au"]))
          }
          return ("video-\(index)", chain + [Self.sink("video-out")])
        }
        let bins = try pipeline.addMedia(from: videoInput, source: SourceFeed.source(), branches: branches)
        var keyframes: [KeyframeLimiter] = []
        for (bin, medium) in zip(bins, video) {
          guard let sink = bin.element(named: "video-out") as? AppSink, let output = sink.staticPad("sink")?.peer
          else { throw GStreamerError.noSuchElement(bin: bin.name, name: "video-out") }
          keyframes.append(KeyframeLimiter { VideoEncoder.requestKeyframe(upstreamOf: output) })
          Self.deliver(from: sink, in: pipeline, to: medium)
        }
        self.keyframes = keyframes
        var sources = try [pipeline.pipeline.element(named: "source", as: AppSrc.self)]
        if let audioEncoder {
          var chain = audioEncoder.chain()
          chain.elements.removeLast()
          let branch = try pipeline.addMedia(
            from: audioInput, source: SourceFeed.source(named: "audiosource", audio: true),
            branches: [("audio", chain + [Self.sink("audio-out")])])[0]
          guard let sink = branch.element(named: "audio-out") as? AppSink else {
            throw GStreamerError.noSuchElement(bin: "audio", name: "audio-out")
          }
          Self.deliver(from: sink, in: pipeline, to: audio)
          sources.append(try pipeline.pipeline.element(named: "audiosource", as: AppSrc.self))
        }
        self.sources = sources
        feed(false)
        try pipeline.play()
      } catch {
        pipeline.stop()
        throw RevueError(.gstreamer, "cannot start the WebRTC broadcast's encoder", underlying: error)
      }
    }

    private static func sink(_ name: String) -> ElementRecipe {
      ElementRecipe("appsink", name: name, ["sync": .bool(false), "max-buffers": .int(8), "drop": .bool(true)])
    }

    /// Hands each encoded frame of `sink` to `medium`'s viewers, with its capture time (its
    /// running time in the encoder's pipeline plus the pipeline's base time). The running time
    /// comes from the sample's segment: x264enc's starts at 1000 hours, and its PTS taken as a
    /// running time put every H.264 frame 1000 hours late at the viewers, which sent nothing.
    private static func deliver(from sink: AppSink, in pipeline: MediaPipeline, to medium: Medium) {
      let owner = pipeline.pipeline
      sink.setCallbacks(newSample: { [weak owner] sample in
        guard let owner, let buffer = sample.buffer, let caps = sample.caps, let pts = buffer.pts,
          let running = sample.runningTime(of: pts)
        else { return }
        let captured = ClockTime(nanoseconds: running.nanoseconds &+ owner.baseTime.nanoseconds)
        medium.deliver(buffer, caps: caps, captured: captured)
      })
    }

    /// Feeds the encoders the tracks' frames and audio (`watched`), or nothing: no one watches.
    func feed(_ watched: Bool) {
      let source = (video: watched ? sources.first : nil, audio: watched ? sources.dropFirst().first : nil)
      if videoInput.source !== source.video { videoInput.attach(source.video) }
      if audioInput.source !== source.audio { audioInput.attach(source.audio) }
    }

    /// The keyframe requests so far, every layer's.
    var keyframeRequests: RTPSender.KeyframeRequests {
      keyframes.map(\.counted).reduce(into: RTPSender.KeyframeRequests()) { total, layer in
        total.received += layer.received
        total.honoured += layer.honoured
      }
    }

    /// Asks `layer`'s encoder for a keyframe: for a viewer's PLI or FIR (`joining` false),
    /// unless one was asked for within 250 ms (it is on its way); for a viewer that starts
    /// watching the layer (`joining`), held to the end of the 250 ms, not dropped (the viewer may
    /// have joined in the middle of that keyframe).
    func requestKeyframe(layer: Int, joining: Bool) {
      guard keyframes.indices.contains(layer) else { return }
      if joining { keyframes[layer].join() } else { keyframes[layer].request() }
    }

    /// Stops the encoders.
    func stop() { pipeline.stop() }
  }

  // MARK: - A viewer

  /// One viewer's session: the encoded frames payloaded with the viewer's payload types into its
  /// own `webrtcbin`, in a pipeline of its own (its fault ends it alone).
  final class Viewer: Sendable {
    let id: String
    private let pipeline: MediaPipeline
    private let webrtc: WebRTCBin
    private let videoFeed: SourceFeed
    private let audioFeed: SourceFeed?
    /// Each encoded medium and the sink of the viewer's it goes to: each layer's gate of
    /// ``layerSwitch``, the audio's feed.
    private let connections: [(Encoder.Medium, any MediaSink)]
    /// The layer sent, switched at keyframes.
    private let layerSwitch: LayerSwitch
    /// The layers, the full size first.
    let layers: [VideoParameters]
    /// The index of the video's `m=` section in the viewer's offer (WHEP's `mediaId`).
    let mediaId: String
    /// With several layers: the viewer's congestion control (from its receiver reports, its
    /// retransmissions kept within the target), and the layer its target chooses.
    private let adaptation: BitrateAdaptation?
    private let choice: Mutex<ViewerLayerChoice>
    /// The video's SSRC, and what was sent with it.
    private let ssrc: UInt32
    private let counters: Locked<RTPSender.Counters>
    private let ended: @Sendable (Viewer) -> Void
    /// Asks a layer's encoder for a keyframe: for a PLI or FIR (false), for a start (true).
    private let keyframe: @Sendable (_ layer: Int, _ joining: Bool) -> Void
    private let closed = Atomic(false)
    /// When the viewer's RTCP last came, the longest wait between two of its packets (nil
    /// before the second), and how many came.
    private let rtcp = Mutex<(last: ContinuousClock.Instant, longestGap: Duration?, packets: Int)>((.now, nil, 0))
    private let started = Date()
    private let origin = ContinuousClock.now

    /// The session now.
    var statistics: ViewerStatistics {
      let layer = layerSwitch.layer
      return ViewerStatistics(
        id: id, connected: started, framesSent: videoFeed.framesSent, audioBuffersSent: audioFeed?.framesSent ?? 0,
        connectionState: webrtc.connectionState, layer: layer, dimensions: layers[layer].dimensions,
        targetBitrate: adaptation?.state.target)
    }

    /// A session whose video is one of `video`'s media (the layers of `layers`, the full size
    /// first) in `codec`, with payload type `video.1`, and the audio of `audio` if given.
    init(
      id: String, codec: VideoCodec, video: ([Encoder.Medium], Int), mediaId: String, layers: [VideoParameters],
      audio: (Encoder.Medium, Int)?, ended: @escaping @Sendable (Viewer) -> Void,
      switched: @escaping @Sendable (Viewer) -> Void,
      keyframe: @escaping @Sendable (_ layer: Int, _ joining: Bool) -> Void
    ) throws(RevueError) {
      self.id = id
      let isH264 = codec == .h264
      self.ended = ended
      self.keyframe = keyframe
      self.layers = layers
      self.mediaId = mediaId
      let videoFeed = SourceFeed()
      self.videoFeed = videoFeed
      // The viewer, once made, for what its pipeline and its layer switch tell of it.
      let made = Relay<Viewer>()
      let layerSwitch = LayerSwitch(to: videoFeed) { _ in
        if let viewer = made.target { switched(viewer) }
      }
      self.layerSwitch = layerSwitch
      choice = Mutex(ViewerLayerChoice(bitrates: layers.map(\.encoding.maxBitrate)))
      adaptation = layers.count > 1 ? BitrateAdaptation(ceiling: layers[0].encoding.maxBitrate, halvingFloor: nil) : nil
      let ssrc = UInt32.random(in: 1..<UInt32.max)
      self.ssrc = ssrc
      pipeline = MediaPipeline(name: "webrtc-viewer-\(id.prefix(8))") { fault in
        guard fault.severity == .error else { return }
        RevueLog.log(.warning, "WebRTC", "viewer \(id.prefix(8)) ended: \(fault)")
        made.target?.end()
      }
      let counters = Locked(RTPSender.Counters())
      self.counters = counters
      let audioFeed = audio.map { _ in SourceFeed() }
      self.audioFeed = audioFeed
      do {
        webrtc = try WebRTCBin(name: "webrtc")
        try webrtc.element.element(named: "rtpbin")?.set("rtcp-sync-send-time", false)
        try pipeline.pipeline.add(webrtc.element)
        var media: [(SourceFeed, Int, Bool)] = [(videoFeed, video.1, true)]
        if let audio, let audioFeed { media.append((audioFeed, audio.1, false)) }
        for (feed, payloadType, isVideo) in media {
          // The SSRC is the payloader's and in the caps from the start: webrtcbin names it in
          // the answer (`a=ssrc`, and with its RTX SSRC `a=ssrc-group:FID`). Left to the
          // payloader, the answer said `FID 0 …` and Chromium decoded frames it never showed.
          let ssrc = isVideo ? ssrc : UInt32.random(in: 1..<UInt32.max)
          let caps = try Self.rtpCaps(video: isVideo ? codec : nil, payloadType: payloadType, ssrc: ssrc)
          var payloader = ElementRecipe(
            isVideo ? (isH264 ? "rtph264pay" : "rtpvp8pay") : "rtpopuspay", name: "payloader",
            isVideo
              ? (isH264
                ? ["aggregate-mode": .enumeration("zero-latency")] : ["picture-id-mode": .enumeration("15-bit")])
              : [:])
          payloader.set("pt", .int(payloadType))
          payloader.set("ssrc", .uint(UInt(ssrc)))
          let branch = try pipeline.addMedia(
            from: feed, source: SourceFeed.source(named: isVideo ? "source" : "audiosource", audio: !isVideo),
            branches: [(isVideo ? "video" : "audio", [payloader, .caps(caps, name: "rtp")])])[0]
          try branch.link(webrtc.element)
          guard let input = branch.staticPad("src")?.peer else {
            throw GStreamerError.noSuchPad(element: "webrtc", pad: "sink")
          }
          try input.set("direction", ofObjectIn: "transceiver", to: Value.enumeration("sendonly"))
          try input.set("codec-preferences", ofObjectIn: "transceiver", to: caps)
          if isVideo {
            try input.set("do-nack", ofObjectIn: "transceiver", to: true)
            let payloaderOutput = branch.element(named: "payloader")?.staticPad("src")
            RTPSender.countPackets(through: payloaderOutput, in: counters)
            // Keyframe requests (PLI, FIR) go to the encoder of the layer sent, rate-limited
            // across viewers.
            payloaderOutput?.addProbe(.eventUpstream) { _, info in
              guard info.event?.structure?.name == "GstForceKeyUnit" else { return .ok }
              keyframe(layerSwitch.layer, false)
              return .drop
            }
          }
        }
        try pipeline.play()
      } catch {
        pipeline.stop()
        throw RevueError(.gstreamer, "cannot start a viewer's session", underlying: error)
      }
      connections =
        video.0.indices.map { (video.0[$0], layerSwitch.gate($0) as any MediaSink) }
        + (audio.flatMap { audio in audioFeed.map { [(audio.0, $0 as any MediaSink)] } } ?? [])
      made.target = self
    }

    /// The RTP caps of `video` in `payloadType` (Opus audio for nil), with the feedback a
    /// viewer may ask for.
    private static func rtpCaps(video: VideoCodec?, payloadType: Int, ssrc: UInt32) throws(GStreamerError) -> Caps {
      var caps = Caps([
        video != nil
          ? try Structure(
            name: "application/x-rtp",
            [
              "media": "video", "encoding-name": video == .h264 ? "H264" : "VP8", "payload": payloadType,
              "clock-rate": 90000, "rtcp-fb-nack": true, "rtcp-fb-nack-pli": true, "rtcp-fb-ccm-fir": true,
            ])
          : try Structure(
            name: "application/x-rtp",
            [
              "media": "audio", "encoding-name": "OPUS", "payload": payloadType, "clock-rate": 48000,
              "encoding-params": "2",
            ])
      ])
      try caps.setField("ssrc", ssrc)
      if video == .h264 {
        // As the offers say it (a browser offers each profile in both modes): the encoder's
        // constrained baseline, level 3.1, in single NAL units and fragments.
        try caps.setField("packetization-mode", "1")
        try caps.setField("profile-level-id", "42e01f")
      }
      return caps
    }

    /// Answers the viewer's `offer` (every candidate in the answer) and starts sending once the
    /// connection is up.
    func answer(_ offer: String, timeout: Duration) async throws(RevueError) -> String {
      do {
        try await webrtc.setRemoteDescription(.offer, sdp: offer)
        let answer = try await webrtc.createAnswer()
        try await webrtc.setLocalDescription(.answer, sdp: answer)
        try await webrtc.gatheringComplete(timeout: timeout)
        let made = webrtc.localDescription ?? answer
        for (medium, sink) in connections { medium.add(sink) }
        watch()
        followThePath()
        return made
      } catch {
        throw RevueError(.invalidInput, "\(error)")
      }
    }

    /// Asks for the keyframe the viewer starts on, once its offer is answered.
    func startWatching() { keyframe(layerSwitch.layer, true) }

    /// With several layers, hands the viewer's receiver reports (and its estimates of the path,
    /// REMB, should it send them) to its congestion control, with round-trip times against the
    /// sender reports `rtpbin` sends four times a second, as a WHIP session does
    /// (``WHIPPublication``); its retransmissions are kept within the target, and after each
    /// report the target chooses the layer (``ViewerLayerChoice``).
    private func followThePath() {
      guard let adaptation, let rtpbin = webrtc.element.element(named: "rtpbin") as? Bin else { return }
      for session in rtpbin.elements where session.factoryName == "rtpsession" {
        try? session.set("rtcp-min-interval", UInt64(RTPSender.reportInterval))
      }
      adaptation.attach(retransmitter: webrtc.element.allElements.first { $0.factoryName == "rtprtxsend" })
      RTPSender.readReports(
        on: { [ssrc] in ssrc }, rtcpOut: rtpbin.pads.filter { $0.name.hasPrefix("send_rtcp_src_") },
        rtcpIn: rtpbin.pads.filter { $0.name.hasPrefix("recv_rtcp_sink_") }, counters: counters,
        adaptation: adaptation
      ) { [weak self] in self?.chooseLayer() }
    }

    /// Switches to the layer the target now chooses, if another, from its next keyframe.
    private func chooseLayer() {
      guard let target = adaptation?.state.target else { return }
      let time = ContinuousClock.now - origin
      guard let layer = choice.withLock({ $0.update(target: target, at: time) }) else { return }
      switchLayer(to: layer, why: "target \(target / 1000) kb/s")
    }

    /// Sends no layer larger than `largest` (0: any) from now on, as the viewer asked
    /// (``ViewerLayerChoice/bound(largest:target:)``).
    func bound(largest: Int) {
      let target = adaptation?.state.target
      guard let layer = choice.withLock({ $0.bound(largest: largest, target: target) }) else { return }
      switchLayer(to: layer, why: "asked for by the viewer")
    }

    /// Sends `layer` from its next keyframe on, asked for now.
    private func switchLayer(to layer: Int, why: String) {
      RevueLog.log(
        .info, "WebRTC",
        "viewer \(id.prefix(8)): \(layers[layer].dimensions.width)×\(layers[layer].dimensions.height)"
          + " from its next keyframe (\(why))")
      layerSwitch.request(layer)
      keyframe(layer, true)
    }

    /// Ends the session when its connection fails or closes, or its RTCP stops (a tab closed
    /// without a DELETE, a network gone: `webrtcbin` checks no ICE consent) for
    /// ``silence(longestGap:)``.
    private func watch() {
      webrtc.onStateChange("connection-state") { [weak self] state in
        if state == "failed" || state == "closed" { self?.end() }
      }
      rtcp.withLock { $0 = (.now, nil, 0) }
      _ = webrtc.onRTCPReceived { [weak self] in
        let now = ContinuousClock.now
        self?.rtcp.withLock { rtcp in
          if rtcp.packets > 0 { rtcp.longestGap = max(rtcp.longestGap ?? .zero, now - rtcp.last) }
          rtcp.last = now
          rtcp.packets += 1
        }
      }
      Task { [weak self] in
        while let viewer = self, !viewer.closed.load(ordering: .relaxed) {
          let (last, longestGap, _) = viewer.rtcp.withLock { $0 }
          let silence = ContinuousClock.now - last
          if silence > Viewer.silence(longestGap: longestGap) {
            let seconds = String(format: "%.1f", Double(silence / .milliseconds(1)) / 1000)
            RevueLog.log(.info, "WebRTC", "viewer \(viewer.id.prefix(8)) gone: no RTCP for \(seconds) s")
            viewer.end()
            return
          }
          try? await Task.sleep(for: .milliseconds(250))
        }
      }
    }

    /// How long a viewer may send no RTCP before its session ends, given the longest wait
    /// between two of its RTCP packets so far (nil before its second): 3 s for one that reports
    /// every second or so (browsers, aiortc), so a closed tab is gone within 5 s; 2.5 times its
    /// longest wait for one that reports less often (`webrtcbin`'s players report every 5 s, as
    /// RFC 3550 says, and were ended after 3 s); 6 s before its second packet (a viewer that
    /// leaves before then is ended 6 s after its first).
    static func silence(longestGap: Duration?) -> Duration {
      guard let longestGap else { return .seconds(6) }
      return max(.seconds(3), longestGap * 2.5)
    }

    /// Whether the session has ended.
    var hasEnded: Bool { closed.load(ordering: .relaxed) }

    /// Ends the session: no more frames, the pipeline stopped.
    func end() {
      guard !closed.exchange(true, ordering: .relaxed) else { return }
      for (medium, sink) in connections { medium.remove(sink) }
      videoFeed.attach(nil)
      audioFeed?.attach(nil)
      pipeline.stop()
      ended(self)
    }
  }
}

import Foundation
import GStreamer
import Synchronization

/// A local video track, and an audio track if given, published to a WHIP endpoint (RFC 9725), as
/// OBS and browsers publish to an SFU or a media server: one WebRTC connection (GStreamer's
/// `webrtcbin`: ICE, DTLS-SRTP, RTCP feedback, NACKs answered with retransmissions (RTX),
/// keyframe requests answered; the audio in Opus) set up with one HTTP exchange. A single
/// video layer follows the path as an RTP publication does, from the endpoint's receiver
/// reports (`BitrateController`); simulcast layers keep their bitrates, and those the
/// endpoint's estimate of the path cannot carry are paused (``layersSent``). There is no FEC:
/// ``Statistics/adaptiveBitrate`` and ``Statistics/lossRecovery`` say what is on.
///
///     let url = URL(string: "whip+https://sfu.example/whip/room1")!
///     let publication = try await WHIPPublication(publishing: camera, to: url, token: "secret")
///     …
///     await publication.stop()  // DELETE: the endpoint ends the session
///
/// The exchange: the offer, with every ICE candidate in it (no trickle), is POSTed as
/// `application/sdp` with the token as `Authorization: Bearer`; the endpoint answers
/// `201 Created` with its answer and the session's URL in `Location`, which ``stop()``
/// DELETEs. The initializer returns once the media connection is up.
public final class WHIPPublication: Sendable {
  /// What the publication has done.
  public struct Statistics: Sendable, Hashable {
    /// Frames the video track gave to the encoder.
    public var framesSent: Int
    /// Frames the video encoder made (none without video).
    public var framesEncoded = 0
    /// Of those, keyframes.
    public var keyframes = 0
    /// Audio buffers the audio track gave to its encoder (none without one).
    public var audioBuffersSent: Int
    /// RTP packets the payloaders gave to the connection, video and audio (before SRTP, without
    /// the retransmissions `webrtcbin` answers NACKs with).
    public var packetsSent = 0
    /// The bytes of those packets, RTP headers included.
    public var bytesSent = 0
    /// Whether the video's bitrate follows the path (the endpoint's receiver reports): with one
    /// video layer, unless the publication was asked for a fixed bitrate; simulcast layers keep
    /// theirs.
    public var adaptiveBitrate = false
    /// The bitrate the video aims at now, when it follows the path.
    public var targetBitrate: Int?
    /// Why ``targetBitrate`` last changed.
    public var targetBitrateReason: BitrateChangeReason?
    /// How lost video packets are recovered beyond keyframe requests (PLI and FIR, which are
    /// answered): retransmission (NACK answered with RTX, which the offer announces), no FEC
    /// yet, whatever ``VideoPublishOptions/lossRecovery`` asked; none without video.
    public var lossRecovery: LossRecovery = []
    /// The WebRTC connection's state: `connected` while it sends; `disconnected`, `failed` or
    /// `closed` once the path or the endpoint went away (`failed` once the publication failed).
    public var connectionState: String
  }

  /// The endpoint the offer was POSTed to (`http` or `https`).
  public let endpoint: URL
  /// The session's URL on the endpoint (its `Location`), which ``stop()`` deletes.
  public let resource: URL
  /// The codec the track is encoded with.
  public let codec: VideoCodec
  /// The video layers the endpoint took, the full size first: every layer offered when it took
  /// simulcast, else the full size alone; empty without video.
  public let layers: [VideoParameters]

  /// The video layers sent now, the full size first: ``layers``, less those the endpoint's
  /// estimate of the path (RTCP REMB, for all the layers together) cannot carry, paused from
  /// the largest down until it can (the smallest is always sent); a paused layer comes back,
  /// with a keyframe, once the estimate has room for it and a tenth more.
  public var layersSent: [VideoParameters] { session.layersSent }

  /// ``layersSent`` at each change from now on.
  public var layersSentChanges: AsyncStream<[VideoParameters]> { session.layerChanges.subscribe() }

  private let session: Session
  let status: StreamStatus

  /// Publishes `track` (and `audio`) to the WHIP endpoint at `url` and returns once the media
  /// flows.
  /// - Parameters:
  ///   - url: `whip+https://HOST/PATH` (or `whip+http://` for a local test endpoint); plain
  ///     `https://` and `http://` are taken too.
  ///   - track: the video track sent.
  ///   - token: the bearer token the endpoint wants, if any.
  ///   - audio: an audio track to send beside the video, in Opus (`audioEncoding`, 48 kb/s by
  ///     default, with in-band FEC).
  ///   - codec: VP8 by default, or H.264 (constrained baseline).
  ///   - encoding: the bitrate and frame rate; by default the track's size's, at 30 fps.
  ///   - audioEncoding: the audio's bitrate; 48 kb/s by default.
  ///   - simulcast: whether smaller layers are offered beside the full size (LiveKit's rule:
  ///     three layers from a longer side of 960, two from 480), each encoded on its own and
  ///     told apart by its RID, as browsers publish to an SFU. They are sent only if the
  ///     endpoint's answer takes them (an SFU's does); else the full size goes alone.
  ///     ``layers`` says what is sent.
  ///   - adaptiveBitrate: whether a single video layer's bitrate follows the path, from the
  ///     endpoint's receiver reports (on by default); simulcast layers keep theirs.
  ///   - timeout: how long each step may take: the first frame, the HTTP exchange (in all,
  ///     however slowly the endpoint sends), the connection (ICE and DTLS).
  /// - Throws: ``RevueError``: `.invalidInput` for a URL of another scheme; `.network` for an
  ///   endpoint that cannot be reached, answers anything but `201` with an SDP answer, does not
  ///   finish its answer within `timeout` or sends more than 256 KiB, or a connection that does
  ///   not come up within `timeout` (the session is then deleted);
  ///   `.gstreamer` when the sender cannot start. Nothing is left running then.
  public convenience init(
    publishing track: LocalVideoTrack, audio: LocalAudioTrack? = nil, to url: URL, token: String? = nil,
    codec: VideoCodec = .vp8, encoding: VideoEncoding? = nil, simulcast: Bool = true,
    audioEncoding: AudioEncoding = .presetMusic, adaptiveBitrate: Bool = true, timeout: Duration = .seconds(10)
  ) async throws(RevueError) {
    let layers = VideoPublishOptions(encoding: encoding, simulcast: simulcast).layers(for: track.publishedSize)
    try await self.init(
      video: (track, layers), audio: audio.map { ($0, audioEncoding) }, codec: codec, to: url, token: token,
      adaptiveBitrate: adaptiveBitrate, timeout: timeout)
  }

  /// Publishes a video track in `layers` (the full size first; more than one are offered as
  /// simulcast), an audio track or both (at least one) to the WHIP endpoint at `url`, as the
  /// public initializer says.
  init(
    video: (LocalVideoTrack, [VideoParameters])?, audio: (LocalAudioTrack, AudioEncoding)?, codec: VideoCodec,
    to url: URL, token: String?, adaptiveBitrate: Bool = true, timeout: Duration
  ) async throws(RevueError) {
    endpoint = try Self.httpURL(url)
    try WHIPExchange.checkToken(token, for: endpoint)
    self.codec = codec
    let name = [video?.0.name, audio?.0.name].compactMap { $0 }.joined(separator: " and ")
    let status = StreamStatus(name: "the WHIP publication of \(name)")
    self.status = status
    let session = try Session(
      video: video, audio: audio, codec: codec, adaptiveBitrate: adaptiveBitrate, status: status)
    do {
      let offer = try await session.offer(timeout: timeout)
      let (answer, resource, _) = try await WHIPExchange.post(
        offer: offer, to: endpoint, token: token, timeout: timeout)
      // No credentials across origins (as fetch): a session elsewhere is deleted without them.
      let sameOrigin = WHIPExchange.origin(of: resource) == WHIPExchange.origin(of: endpoint)
      session.resource.withLock { $0 = (resource, sameOrigin ? token : nil) }
      layers = try await session.connect(answer: answer, timeout: timeout)
      // The video starts now, with a keyframe: what was encoded while the connection came up
      // was dropped, not sent as a burst once it is up.
      session.pacer?.release(fromKeyframeOf: session.videoEncoder)
      self.resource = resource
      session.watchConnection()
      session.followThePath()
    } catch {
      await session.end()
      throw error
    }
    self.session = session
  }

  deinit {
    let session = session
    Task { await session.end() }
  }

  /// Whether the publication is sending, failed (and why), or was stopped. It fails when its
  /// pipeline does, and when the connection fails or the endpoint stops answering (no RTCP from
  /// it for 3 s with video, 8 s for audio alone): the tracks are let go of and the session is
  /// deleted then.
  public var state: StreamState { status.state }

  /// The publication's changes from now on: faults of its pipeline and of its connection, and
  /// its end.
  public var events: AsyncStream<StreamEvent> { status.events }

  /// What the publication has done so far.
  public var statistics: Statistics {
    let counted = counters
    let target = session.adaptation?.state
    return Statistics(
      framesSent: session.feed.framesSent, framesEncoded: counted.framesEncoded, keyframes: counted.keyframes,
      audioBuffersSent: session.audioFeed.framesSent, packetsSent: counted.packetsSent, bytesSent: counted.bytesSent,
      adaptiveBitrate: target != nil, targetBitrate: target?.target, targetBitrateReason: target?.reason,
      lossRecovery: session.track == nil ? [] : .nack,
      connectionState: { if case .failed = state { "failed" } else { session.webrtc.connectionState } }())
  }

  /// What the video's send path did, for the tests' curves: the pacer's rate now (nil without
  /// one) and the packets it held, the retransmission requests that reached the RTX sender
  /// (those over the retransmission budget do not) and the retransmissions it sent, and the
  /// requests refused over the budget.
  var sendPath: (pacerRate: Int?, packetsHeld: Int, requested: Int, retransmitted: Int, refused: Int) {
    let retransmitter = session.retransmitter
    let requested = (try? retransmitter?.get("num-rtx-requests", as: UInt.self)).map { Int($0) } ?? 0
    let retransmitted = (try? retransmitter?.get("num-rtx-packets", as: UInt.self)).map { Int($0) } ?? 0
    return (
      session.pacer?.rate, session.pacer?.held.packets ?? 0, requested, retransmitted,
      session.adaptation?.retransmissionsRefused ?? 0
    )
  }

  /// What the encoders and payloaders made, as an RTP publication counts it.
  var counters: RTPSender.Counters { session.counters.value.withLock { $0 } }

  /// Ends the session: the endpoint is told (`DELETE` of ``resource``, waited for up to 5 s),
  /// the connection closes and the encoder stops; the tracks go on.
  public func stop() async {
    await stopSending()?.value
  }

  /// Stops sending at once and tells the endpoint in the task returned (nil when it was told
  /// already): for callers that cannot wait.
  @discardableResult
  func stopSending() -> Task<Void, Never>? {
    let deletion = session.close()
    status.stopped()
    return deletion.map { resource, token in Task { await WHIPExchange.delete(resource, token: token) } }
  }

  /// `url` as messages show it: its scheme, host, port and path, without user info, and `?…`
  /// for a query or fragment (which may hold a key or a signature).
  public static func redacted(_ url: URL) -> String {
    guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(a URL)" }
    let hidden = components.percentEncodedQuery != nil || components.percentEncodedFragment != nil
    components.user = nil
    components.password = nil
    components.query = nil
    components.fragment = nil
    return (components.string ?? "(a URL)") + (hidden ? "?…" : "")
  }

  /// `http(s)://…` for `whip+http(s)://…` and `http(s)://…`.
  static func httpURL(_ url: URL) throws(RevueError) -> URL {
    try WHIPExchange.httpURL(url, scheme: "whip") {
      "cannot publish to '\(redacted(url))': use whip+https://HOST/PATH (or whip+http:// for a local endpoint)"
    }
  }

  /// The sender: the tracks' frames and audio, encoded, into `webrtcbin`.
  private final class Session: Sendable {
    let pipeline: MediaPipeline
    let webrtc: WebRTCBin
    let feed: SourceFeed
    let audioFeed = SourceFeed()
    let track: LocalVideoTrack?
    let audio: LocalAudioTrack?
    /// What the video encoder and the payloaders made.
    let counters = Locked(RTPSender.Counters())
    /// The congestion control of a single video layer; nil for simulcast, audio alone, or a
    /// fixed bitrate.
    let adaptation: BitrateAdaptation?
    /// The video stream's packets alone, and the endpoint's reports on it, for ``adaptation``.
    private let videoCounters = Locked(RTPSender.Counters())
    /// The SSRC of the video (its full size's), 0 without video.
    private let videoSSRC: UInt32
    /// The session's URL and the token, once the endpoint made one.
    let resource = Mutex<(URL, String?)?>(nil)
    /// Whether the session was closed (stopped, or ended by a fault).
    private let closed = Atomic(false)
    /// When the endpoint's RTCP last arrived (the connection's start before the first), and
    /// the longest wait between two of its packets so far.
    private let rtcp = Mutex<(last: ContinuousClock.Instant, longestGap: Duration)>((.now, .zero))
    /// Where the offer's caps are known: the payloaders' outputs, video first (the full size's).
    private let payloaderOutputs: [(kind: String, pad: Pad)]
    /// The video layers, the full size first; none without video.
    private let layers: [VideoParameters]
    /// The simulcast layers, when there are several.
    private let simulcast: SimulcastSender?
    /// The single video layer's pacer, with congestion control.
    let pacer: Pacer?
    /// The full size's encoder; nil without video.
    let videoEncoder: Element?
    /// Of the simulcast layers, those the answer took, and those on now (the receiver's estimate
    /// pauses the rest: ``SimulcastAllocation``).
    private let simulcastLayers = Mutex<(offered: [Bool], on: [Bool])>(([], []))
    /// The layers sent, at each change.
    let layerChanges = Broadcast<[VideoParameters]>()

    init(
      video: (LocalVideoTrack, [VideoParameters])?, audio: (LocalAudioTrack, AudioEncoding)?, codec: VideoCodec,
      adaptiveBitrate: Bool, status: StreamStatus
    ) throws(RevueError) {
      track = video?.0
      self.audio = audio?.0
      feed = SourceFeed(frameRate: video?.1.first?.encoding.maxFps)
      // A fault that ends the publication (the pipeline's, or the connection's: see
      // watchConnection()) lets go of the tracks and deletes the endpoint's session.
      let ended = Relay<Session>()
      pipeline = MediaPipeline(name: "whip-sender") { fault in
        guard status.report(fault), let session = ended.target else { return }
        Task { await session.end() }
      }
      var outputs: [(String, Pad)] = []
      var simulcast: SimulcastSender?
      var adaptation: BitrateAdaptation?
      var pacer: Pacer?
      var videoEncoder: Element?
      var videoSSRC: UInt32 = 0
      do {
        webrtc = try WebRTCBin(name: "webrtc")
        // Sender reports map capture time, not send time, as an RTP publication's do: the
        // encoders' delays differ (and vary from run to run), and with send time the receiver
        // lined audio and video up by them (measured at aiortc: from -18 to +22 ms).
        try webrtc.element.element(named: "rtpbin")?.set("rtcp-sync-send-time", false)
        try pipeline.pipeline.add(webrtc.element)
        if let (_, layers) = video {
          // Feedback the encoder answers, announced in the offer from the caps; with congestion
          // control the packets carry their send times (abs-send-time), from which a receiver
          // estimates the path (REMB, asked for in offer()).
          var rtp = Caps([
            try Structure(
              name: "application/x-rtp",
              [
                "media": "video", "encoding-name": codec == .vp8 ? "VP8" : "H264", "payload": 96,
                "clock-rate": 90000, "rtcp-fb-nack": true, "rtcp-fb-nack-pli": true, "rtcp-fb-ccm-fir": true,
              ])
          ])
          if layers.count == 1 && adaptiveBitrate {
            try rtp.setField("extmap-\(Self.absoluteSendTimeID)", Pad.absoluteSendTimeURI)
          }
          // One branch per layer (the full size first), each a bin `layerN` whose payloader
          // sends an SSRC of its own, said in its caps: the offer names it and its RTX SSRC
          // (`a=ssrc`, `a=ssrc-group:FID`), without which a peer that maps retransmissions by
          // SSRC (aiortc) dropped every one. With simulcast each layer is behind a valve the
          // answer opens (sentLayers(answer:)), the branches meeting in `rtpfunnel` (which hands
          // keyframe requests to the encoder of their SSRC). The offer's caps are the full
          // size's (its `rtp`). A single layer that follows the path ends in a ``Pacer``.
          let isSimulcast = layers.count > 1
          let ssrcs = layers.map { _ in UInt32.random(in: 1..<UInt32.max) }
          videoSSRC = ssrcs[0]
          let chains = try layers.indices.map { index throws(GStreamerError) in
            var encoder = VideoEncoder(codec, layers[index], scaled: index > 0)
            encoder.dropsFramesOverBudget = layers.count == 1 && adaptiveBitrate
            var chain = try encoder.chain()
            chain.last.name = "payloader"
            chain.last.set("ssrc", .uint(UInt(ssrcs[index])))
            if isSimulcast {
              chain = [ElementRecipe("valve", name: "valve", ["drop": .bool(index > 0)])] + chain
            }
            var caps = rtp
            try caps.setField("ssrc", ssrcs[index])
            let paced = !isSimulcast && adaptiveBitrate
            return (name: "layer\(index)", chain: chain + [.caps(caps, name: "rtp")] + (paced ? Pacer.chain : []))
          }
          let branches = try pipeline.addMedia(from: feed, source: SourceFeed.source(), branches: chains)
          guard let output = branches[0].element(named: "rtp")?.staticPad("src") else {
            throw GStreamerError.noSuchPad(element: "rtp", pad: "src")
          }
          outputs.append(("video", output))
          let encoder = branches[0].element(named: "encoder")
          videoEncoder = encoder
          RTPSender.countFrames(leaving: encoder, in: counters)
          let sender: Element
          if isSimulcast {
            let funnel = try ElementRecipe("rtpfunnel", name: "layers").make()
            try pipeline.pipeline.add(funnel)
            for branch in branches { try branch.link(funnel) }
            var mids: [Element] = []
            for (branch, rid) in zip(branches, SimulcastSDP.rids(count: layers.count)) {
              guard let payloader = branch.element(named: "payloader") else {
                throw GStreamerError.noSuchElement(bin: branch.name, name: "payloader")
              }
              let (streamID, mid) = (SimulcastSDP.streamIDExtension, SimulcastSDP.midExtension)
              try payloader.addRTPHeaderExtension(uri: streamID.uri, id: streamID.id, properties: ["rid": .string(rid)])
              mids.append(try payloader.addRTPHeaderExtension(uri: mid.uri, id: mid.id))
            }
            simulcast = SimulcastSender(
              rids: SimulcastSDP.rids(count: layers.count), funnel: funnel,
              valves: branches.compactMap { $0.element(named: "valve") },
              payloaders: branches.compactMap { $0.element(named: "payloader") }, mids: mids)
            sender = funnel
          } else {
            sender = branches[0]
            if adaptiveBitrate {
              let adapted = LocalTrackPublication.adaptation(
                for: layers[0], start: Self.startBitrate, retransmissionPolicy: .webRTC)
              adapted.attach(to: encoder)
              // The pacer ends the branch; it drops what comes before the connection is up
              // (released in init). What leaves it is what is sent: counted for the reports, and
              // stamped with its send time (stamped before it, its waits read as a queue on the
              // path to the receiver's estimate).
              guard let identity = branches[0].element(named: "pacer"), let sent = identity.staticPad("src") else {
                throw GStreamerError.noSuchElement(bin: branches[0].name, name: "pacer")
              }
              let paces = Pacer(rate: Self.startBitrate)
              paces.attach(to: identity)
              paces.hold()
              adapted.attach(pacer: paces)
              pacer = paces
              RTPSender.countPackets(through: sent, in: videoCounters)
              sent.writeAbsoluteSendTime(id: Self.absoluteSendTimeID)
              adaptation = adapted
            }
          }
          let input = try Self.link(sender, into: webrtc, counters: counters)
          // The NACKs offered are answered: webrtcbin offers RTX (RFC 4588, an SSRC group) and
          // resends what a receiver asks for from the packets it sent.
          try input.set("do-nack", ofObjectIn: "transceiver", to: true)
        }
        if let (_, encoding) = audio {
          let opus = try ElementRecipe.caps(
            "application/x-rtp",
            [
              "media": "audio", "encoding-name": "OPUS", "payload": 111, "clock-rate": 48000,
              "encoding-params": "2",
            ], name: "rtp")
          let branch = try pipeline.addMedia(
            from: audioFeed, source: SourceFeed.source(named: "audiosource", audio: true),
            branches: [("audio", AudioEncoder(encoding: encoding, dtx: false).chain() + [opus])])[0]
          guard let output = branch.element(named: "rtp")?.staticPad("src") else {
            throw GStreamerError.noSuchPad(element: "rtp", pad: "src")
          }
          outputs.append(("audio", output))
          try Self.link(branch, into: webrtc, counters: counters)
        }
        try pipeline.play()
      } catch {
        pipeline.stop()
        throw RevueError(.gstreamer, "cannot start the WHIP sender", underlying: error)
      }
      payloaderOutputs = outputs
      self.adaptation = adaptation
      self.pacer = pacer
      self.videoEncoder = videoEncoder
      self.videoSSRC = videoSSRC
      self.simulcast = simulcast
      layers = video?.1 ?? []
      track?.attach(feed)
      audio?.0.attach(audioFeed)
      ended.target = self
    }

    /// Links `sender` (a branch's bin, or the simulcast layers' funnel) into a new sink pad of
    /// `webrtc`, its packets counted in `counters`; returns that pad.
    @discardableResult
    private static func link(_ sender: Element, into webrtc: WebRTCBin, counters: Locked<RTPSender.Counters>)
      throws(GStreamerError) -> Pad
    {
      try sender.link(webrtc.element)
      guard let output = sender.staticPad("src"), let input = output.peer else {
        throw GStreamerError.noSuchPad(element: sender.name, pad: "src")
      }
      RTPSender.countPackets(through: output, in: counters)
      return input
    }

    /// The offer, with every local candidate, once the first packet says what the stream is
    /// (its caps before it may lack H.264's parameter sets and packetization mode, which an
    /// answerer needs).
    func offer(timeout: Duration) async throws(RevueError) -> String {
      // The video's first packet (H.264's first caps lack its parameter sets); the audio's
      // caps (webrtcbin holds an audio stream's data until the offer is made).
      for (kind, output) in payloaderOutputs {
        let caps =
          kind == "video"
          ? await output.capsOfFirstBuffer(timeout: timeout) : await output.waitForCaps(timeout: timeout)
        guard let caps else {
          throw RevueError(
            .invalidState, "the \(kind) track gave nothing to encode within \(timeout): is its capturer started?")
        }
        if kind == "video", let simulcast {
          // The funnel's caps say only `application/x-rtp`: the transceiver is told the full
          // size's (with the RID and MID extensions), less its sequence and timestamp offsets.
          // With its SSRC, webrtcbin picks the SSRC of its retransmissions, tells its RTX sender
          // before the first packet, and announces both (`a=ssrc-group:FID`), which the offer
          // keeps: an SSRC of Revue's own, told the RTX sender once the answer came, was too late
          // once in two runs, and aiortc then dropped every retransmission (300 of 465 frames).
          var preferred = caps.structure(at: 0)
          for field in ["timestamp-offset", "seqnum-offset"] { preferred.removeField(field) }
          do {
            guard let pad = simulcast.funnel.staticPad("src")?.peer else {
              throw GStreamerError.noSuchPad(element: "webrtc", pad: "sink")
            }
            try pad.set("codec-preferences", ofObjectIn: "transceiver", to: Caps([preferred]))
          } catch {
            throw RevueError(.gstreamer, "cannot offer the simulcast layers", underlying: error)
          }
        }
      }
      do {
        let offer = try await webrtc.createOffer()
        try await webrtc.setLocalDescription(.offer, sdp: offer)
        try await webrtc.gatheringComplete(timeout: timeout)
        var made = webrtc.localDescription ?? offer
        if adaptation != nil { made = Self.askingForREMB(made) }
        guard let simulcast else { return made }
        if let mid = SimulcastSDP.firstVideoMID(in: made) {
          for extensionElement in simulcast.mids { try extensionElement.set("mid", mid) }
        }
        return SimulcastSDP.offer(
          made, rids: simulcast.rids,
          fullSize: (videoSSRC, SimulcastSDP.retransmissionSSRC(of: videoSSRC, in: made), LocalTrackPublication.cname))
      } catch {
        throw RevueError(.gstreamer, "cannot make the WebRTC offer", underlying: error)
      }
    }

    /// Takes the endpoint's answer, stops the layers it did not take, and waits for the media
    /// connection; returns the video layers sent.
    func connect(answer: String, timeout: Duration) async throws(RevueError) -> [VideoParameters] {
      do {
        try await webrtc.setRemoteDescription(.answer, sdp: answer)
      } catch {
        throw RevueError(.network, "the WHIP endpoint's answer does not fit the offer", underlying: error)
      }
      // Before any packet goes: a receiver that took one stream must see only that one.
      let sent = sentLayers(answer: answer)
      let state = await webrtc.connectionState(in: ["connected", "failed", "closed"], timeout: timeout)
      guard state == "connected" else {
        throw RevueError(
          .network,
          "the WebRTC connection to the WHIP endpoint did not come up within \(timeout) (still \(state ?? webrtc.connectionState))"
        )
      }
      return sent
    }

    /// The layers the answer takes (RFC 8853: all it receives, or the full size alone when it
    /// takes no simulcast): their valves open, the others' stay shut (their encoders idle).
    private func sentLayers(answer: String) -> [VideoParameters] {
      guard let simulcast else { return layers }
      let accepted = Set(SimulcastSDP.acceptedRIDs(in: answer)).intersection(simulcast.rids)
      let offered = simulcast.rids.indices.map { accepted.isEmpty ? $0 == 0 : accepted.contains(simulcast.rids[$0]) }
      simulcastLayers.withLock { $0 = (offered, offered) }
      for index in offered.indices { try? simulcast.valves[index].set("drop", !offered[index]) }
      if accepted.isEmpty {
        RevueLog.log(.info, "WHIP", "the endpoint takes no simulcast: the full size goes alone")
      }
      return zip(layers, offered).filter(\.1).map(\.0)
    }

    /// The `rtprtxsend` inside `webrtcbin` that answers NACKs with retransmissions: there from
    /// the answer on.
    var retransmitter: Element? { webrtc.element.allElements.first { $0.factoryName == "rtprtxsend" } }

    /// The video layers sent now, the full size first.
    var layersSent: [VideoParameters] {
      guard simulcast != nil else { return layers }
      let on = simulcastLayers.withLock { $0.on }
      return zip(layers, on).filter(\.1).map(\.0)
    }

    /// Sends the simulcast layers the receiver's estimate of the path (`estimate` bits per
    /// second, for all of them) carries, and pauses the rest (``SimulcastAllocation``): a layer
    /// paused stops at its valve (its encoder idles); one resumed starts with a keyframe.
    private func allocate(_ estimate: Int) {
      guard let simulcast else { return }
      let bitrates = layers.map(\.encoding.maxBitrate)
      let changed: [VideoParameters]? = simulcastLayers.withLock { state in
        let on = SimulcastAllocation.layersOn(
          bitrates: bitrates, offered: state.offered, on: state.on, estimate: estimate)
        guard on != state.on else { return nil }
        for index in on.indices where on[index] != state.on[index] {
          try? simulcast.valves[index].set("drop", !on[index])
          if on[index], let output = simulcast.payloaders[index].staticPad("src") {
            VideoEncoder.requestKeyframe(upstreamOf: output)
          }
          RevueLog.log(
            .info, "WHIP",
            "layer \(layers[index].dimensions) \(on[index] ? "resumed" : "paused"): the endpoint estimates"
              + " \(estimate / 1000) kb/s")
        }
        state.on = on
        return zip(layers, on).filter(\.1).map(\.0)
      }
      if let changed { layerChanges.send(changed) }
    }

    /// How long the endpoint may send no RTCP before the session counts as failed, at least:
    /// 3 s with video, which receivers report on every second or so (libwebrtc, Janus, aiortc);
    /// 8 s for audio alone, which libwebrtc and mediasoup report on every 5 s (RFC 3550's
    /// interval, randomised to 2.5–7.5 s). Twice the longest wait seen between two of its
    /// packets when that is longer.
    private var rtcpSilence: Duration { track == nil ? .seconds(8) : .seconds(3) }

    /// Watches the connection once it is up, until the session closes: a connection that
    /// fails or closes, or an endpoint whose RTCP stops (`webrtcbin` checks no ICE consent,
    /// so an endpoint that vanished or dropped the session leaves the connection `connected`),
    /// ends the publication as a fault of `webrtcbin`: with video, within 3.25 s of the
    /// endpoint's last RTCP (or of the connection, before its first).
    func watchConnection() {
      // Weakly: webrtcbin holds the handlers.
      webrtc.onStateChange("connection-state") { [weak self] state in
        if state == "failed" || state == "closed" { self?.fail("the WebRTC connection to the WHIP endpoint \(state)") }
      }
      rtcp.withLock { $0.last = .now }
      let watched = webrtc.onRTCPReceived { [weak self] in
        let now = ContinuousClock.now
        self?.rtcp.withLock { rtcp in
          rtcp.longestGap = max(rtcp.longestGap, now - rtcp.last)
          rtcp.last = now
        }
      }
      guard watched > 0 else {
        RevueLog.log(.warning, "WHIP", "the endpoint's RTCP cannot be watched: a vanished endpoint goes unnoticed")
        return
      }
      Task { [weak self] in
        while let session = self, !session.closed.load(ordering: .relaxed) {
          let (last, gap) = session.rtcp.withLock { ($0.last, $0.longestGap) }
          let silence = ContinuousClock.now - last
          if silence > max(session.rtcpSilence, gap * 2) {
            let seconds = String(format: "%.1f", Double(silence / .milliseconds(1)) / 1000)
            session.fail("the WHIP endpoint stopped answering: no RTCP from it for \(seconds) s")
            return
          }
          try? await Task.sleep(for: .milliseconds(250))
        }
      }
    }

    /// Where a single video layer's congestion control starts: it climbs from there as the
    /// reports allow. Started at a 1.5 Mb/s layer's full rate through a 250 kb/s path, aiortc
    /// decoded nothing for 4–5 s: its jitter buffer waits for each packet the first seconds
    /// lost until 128 packets have come (4 s of video at these rates), and asks again for a
    /// packet only when another goes missing. libwebrtc's 300 kb/s, with the pacer, still lost
    /// packets through that path in its first two seconds (aiortc's receiver reports come
    /// every 0.5–1.5 s, its REMB at the first sign of a queue, 186–192 kb/s within the first
    /// second), retransmissions over the budget were refused, and aiortc froze for 3–4 s in both
    /// runs measured (2026-12-07); from 200 kb/s it did not (docs/congestion-control.md).
    static let startBitrate = 200_000

    /// The id of the absolute send time header extension in the video's packets.
    static let absoluteSendTimeID = 3

    /// `offer` with `a=rtcp-fb:96 goog-remb` after the video's `nack pli`: the receiver may
    /// send its estimate of the path (REMB). `webrtcbin` cannot say it from caps (a field
    /// `rtcp-fb-goog-remb` becomes `goog remb`, its dashes made spaces).
    static func askingForREMB(_ offer: String) -> String {
      offer.replacing("a=rtcp-fb:96 nack pli\r\n", with: "a=rtcp-fb:96 nack pli\r\na=rtcp-fb:96 goog-remb\r\n")
    }

    /// Once the connection is up, hands the endpoint's receiver reports on the video (read as
    /// `webrtcbin`'s `rtpbin` takes them in, decrypted) to the congestion control, if there is
    /// one, with round-trip times against the sender reports `rtpbin` sends, as an RTP
    /// publication does: sender reports four times a second (``RTPSender/reportInterval``; at
    /// RFC 3550's five seconds a round-trip time is one sample, repeated, that saw the queue of
    /// seconds before), and the retransmissions `webrtcbin` answers NACKs with kept within the
    /// budget of the target (unbudgeted, a congested path's NACKs for most packets were all
    /// answered, and the retransmissions kept the path full: 0 fps for 4 s at 250 kb/s). With
    /// simulcast, hands the endpoint's estimates of the path (REMB) to the layers' allocation
    /// instead (``allocate(_:)``).
    func followThePath() {
      guard adaptation != nil || simulcast != nil, let rtpbin = webrtc.element.element(named: "rtpbin") as? Bin
      else { return }
      for session in rtpbin.elements where session.factoryName == "rtpsession" {
        try? session.set("rtcp-min-interval", UInt64(RTPSender.reportInterval))
      }
      let rtcpIn = rtpbin.pads.filter { $0.name.hasPrefix("recv_rtcp_sink_") }
      guard let adaptation else {
        // Simulcast: the receiver's estimate of the path, for all the layers, picks those sent.
        for pad in rtcpIn {
          pad.addProbe(.buffer) { [weak self] _, info in
            if let estimate = info.buffer?.rtcpReceiverEstimate { self?.allocate(estimate.bitsPerSecond) }
            return .ok
          }
        }
        return
      }
      adaptation.attach(retransmitter: retransmitter)
      RTPSender.readReports(
        on: { [videoSSRC] in videoSSRC },
        rtcpOut: rtpbin.pads.filter { $0.name.hasPrefix("send_rtcp_src_") },
        rtcpIn: rtcpIn, counters: videoCounters,
        adaptation: adaptation)
    }

    /// Ends the publication with `reason` as an error of `webrtcbin`, unless it was closed: the
    /// pipeline's owner reports it and stops the pipeline, and the session ends.
    private func fail(_ reason: String) {
      if !closed.load(ordering: .relaxed) { webrtc.element.postError(reason) }
    }

    /// Stops sending; returns the endpoint's session to delete and its token, the first time.
    func close() -> (URL, String?)? {
      closed.store(true, ordering: .relaxed)
      track?.detach(feed)
      audio?.detach(audioFeed)
      feed.attach(nil)
      audioFeed.attach(nil)
      pipeline.stop()
      return resource.withLock { resource in
        defer { resource = nil }
        return resource
      }
    }

    /// Stops sending and deletes the endpoint's session, once.
    func end() async {
      guard let (resource, token) = close() else { return }
      await WHIPExchange.delete(resource, token: token)
    }
  }
}

/// The simulcast layers of a WHIP session's sender: their RIDs, the funnel they meet in, and
/// each layer's valve, payloader and MID extension (told the MID once the offer has one), the
/// full size first.
private struct SimulcastSender: Sendable {
  let rids: [String]
  let funnel: Element
  /// Only the full size's is open until the answer opens the layers it takes: `webrtcbin` holds
  /// the first packet it gets until it is negotiated, and with it the funnel, where a second
  /// layer's first caps and queries would wait too.
  let valves: [Element]
  let payloaders: [Element]
  let mids: [Element]
}

import Foundation
import GStreamer
import Synchronization

/// A stream played from a WHEP server (the IETF WHEP draft): the node's own
/// ``WebRTCBroadcast``, or any other (MediaMTX, a media server's WHEP front end). One WebRTC
/// connection (`webrtcbin` as the offerer: ICE, DTLS-SRTP, its own jitter buffer, NACKs for
/// lost video packets and keyframe requests) set up with one HTTP exchange, as
/// ``WHIPPublication`` sets up a publication, the other way round.
///
/// The exchange: the offer (receive-only video, VP8 and H.264 with NACK and PLI feedback, and
/// receive-only Opus audio), every ICE candidate in it, is POSTed as `application/sdp`, with the
/// token as `Authorization: Bearer`; the server answers `201 Created` with its answer and the
/// session's URL in `Location`, which ``end()`` DELETEs. Each stream `webrtcbin` hands out (a
/// pad per stream it receives) is depayloaded and decoded straight into its track's renderers,
/// on `webrtcbin`'s streaming thread.
///
/// Ownership: each track holds its ``Stream``, which holds the session; the session holds its
/// streams weakly, so that a participant dropped without a disconnect ends the session (and
/// deletes it on the server) once both its tracks are gone.
final class WHEPSession: Sendable {
  /// The server's WHEP URL (`http` or `https`).
  let endpoint: URL
  /// The pipeline of `webrtcbin` and the decoders of its streams.
  let pipeline: MediaPipeline
  /// The WebRTC peer: the offerer, receive-only.
  private let webrtc: WebRTCBin
  /// The streams, once made: a track's receiver each, held by the track.
  private let video = Relay<Stream>()
  private let audio = Relay<Stream>()
  /// The session's URL on the server and the token to delete it with, once the server made one.
  private let resource = Mutex<(URL, String?)?>(nil)
  /// The layer selection, when the server links it (a simulcast broadcast's).
  let layerPreference = Mutex<WHEPLayerPreference?>(nil)
  /// Whether the session was closed (stopped, or ended by a fault).
  private let closed = Atomic(false)
  /// When the server was last heard from: an RTP or RTCP packet of it.
  private let heard = Mutex(ContinuousClock.now)
  /// The codec of each video stream `webrtcbin` hands out, as it does.
  private let videoCodecs: (stream: AsyncStream<VideoCodec>, continuation: AsyncStream<VideoCodec>.Continuation) =
    AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))

  /// How long the server may send nothing (no media, no RTCP) before the session counts as
  /// failed: it sends media many times a second, and RTCP reports every 5 s at most (RFC 3550's
  /// interval, randomised to 2.5–7.5 s).
  static let silence = Duration.seconds(10)

  /// Payload types offered: VP8 and H.264 as browsers number them, Opus as they do.
  static let payloadTypes = (vp8: 96, h264: 102, opus: 111)

  // MARK: - Watching

  /// Plays the stream of the WHEP server at `url` and returns the participant whose tracks play
  /// it (as ``Room/watch(whep:token:timeout:)`` says), once the media connection is up.
  /// - Throws: ``RevueError``, nothing left running and the server's session deleted when it made one.
  static func participant(watching url: URL, token: String?, timeout: Duration) async throws(RevueError)
    -> RemoteParticipant
  {
    let endpoint = try httpURL(url)
    try WHIPExchange.checkToken(token, for: endpoint, as: "WHEP")
    let session = try WHEPSession(endpoint: endpoint)
    do throws(RevueError) {
      let offer = try await session.offer(timeout: timeout)
      let (answer, resource, links) = try await WHIPExchange.post(
        offer: offer, to: endpoint, token: token, timeout: timeout, server: "WHEP server")
      // No credentials across origins (as fetch): a session elsewhere is deleted without them.
      let sameOrigin = WHIPExchange.origin(of: resource) == WHIPExchange.origin(of: endpoint)
      session.resource.withLock { $0 = (resource, sameOrigin ? token : nil) }
      session.layerPreference.withLock { $0 = WHEPLayerPreference(links: links, token: sameOrigin ? token : nil) }
      let sent = media(in: answer)
      guard sent.video != nil || sent.audio else {
        throw RevueError(
          .network,
          "the WHEP server \(WHIPPublication.redacted(endpoint)) answered with no stream Revue plays"
            + " (it sends no VP8 or H.264 video and no Opus audio)")
      }
      let participant = session.participant(video: sent.video, audio: sent.audio)
      try await session.connect(answer: answer, timeout: timeout)
      session.watchConnection()
      if sent.video != nil { await session.firstVideo(within: timeout) }
      return participant
    } catch {
      await session.end()
      throw error
    }
  }

  /// `http(s)://…` for `whep+http(s)://…` and `http(s)://…`.
  /// - Throws: ``RevueError`` (`.invalidInput`) for another scheme or no host.
  static func httpURL(_ url: URL) throws(RevueError) -> URL {
    try WHIPExchange.httpURL(url, scheme: "whep") {
      "cannot watch '\(WHIPPublication.redacted(url))': use https://HOST/PATH (or http:// for a local server;"
        + " whep+https:// and whep+http:// are taken too)"
    }
  }

  /// What an answer sends this viewer: the codec of its video section (the first of its
  /// payload types that is VP8 or H.264) and whether its audio section carries Opus. A section
  /// the server rejected (port 0) or does not send on (`a=inactive`, `a=recvonly`) sends
  /// nothing.
  static func media(in answer: String) -> (video: VideoCodec?, audio: Bool) {
    var video: VideoCodec?
    var audio = false
    var section: (media: String, formats: [String], names: [String: String], sends: Bool)?
    /// Takes in what the section read so far sends.
    func close() {
      guard let current = section, current.sends else { return }
      let names = current.formats.compactMap { current.names[$0] }
      if current.media == "video", video == nil {
        video = names.lazy.compactMap { ["VP8": VideoCodec.vp8, "H264": .h264][$0] }.first
      } else if current.media == "audio", names.contains("OPUS") {
        audio = true
      }
    }
    for raw in answer.split(whereSeparator: \.isNewline) {
      let line = raw.trimmingCharacters(in: .whitespaces)
      if line.hasPrefix("m=") {
        close()
        let fields = line.dropFirst(2).split(separator: " ").map(String.init)
        let port = fields.count > 1 ? Int(fields[1]) : nil
        section = (fields.first ?? "", Array(fields.dropFirst(3)), [:], (port ?? 0) > 0)
      } else if line.hasPrefix("a=rtpmap:"), section != nil {
        let fields = line.dropFirst("a=rtpmap:".count).split(separator: " ", maxSplits: 1)
        guard fields.count == 2, let name = fields[1].split(separator: "/").first else { continue }
        section?.names[String(fields[0])] = name.uppercased()
      } else if line == "a=inactive" || line == "a=recvonly" {
        section?.sends = false
      }
    }
    close()
    return (video, audio)
  }

  // MARK: - The session

  /// A `webrtcbin` offering to receive video and audio, in a pipeline of its own.
  /// - Throws: ``RevueError`` (`.gstreamer`) when `webrtcbin` is missing or refuses the
  ///   transceivers.
  private init(endpoint: URL) throws(RevueError) {
    self.endpoint = endpoint
    let streams = (video: video, audio: audio)
    let ended = Relay<WHEPSession>()
    // A fault reaches both tracks; an error ends the session (deleted on the server).
    pipeline = MediaPipeline(name: "whep-receiver") { fault in
      var ends = false
      for stream in [streams.video.target, streams.audio.target] {
        if stream?.status.report(fault) == true { ends = true }
      }
      guard ends || fault.severity == .error, let session = ended.target else { return }
      Task { await session.end() }
    }
    do {
      webrtc = try WebRTCBin(name: "webrtc")
      try pipeline.pipeline.add(webrtc.element)
      let (vp8, h264, opus) = Self.payloadTypes
      let videoCaps = Caps([
        try Structure(
          name: "application/x-rtp",
          [
            "media": "video", "encoding-name": "VP8", "payload": vp8, "clock-rate": 90000, "rtcp-fb-nack": true,
            "rtcp-fb-nack-pli": true, "rtcp-fb-ccm-fir": true,
          ]),
        try Structure(
          name: "application/x-rtp",
          [
            "media": "video", "encoding-name": "H264", "payload": h264, "clock-rate": 90000,
            "packetization-mode": "1", "profile-level-id": "42e01f", "level-asymmetry-allowed": "1",
            "rtcp-fb-nack": true, "rtcp-fb-nack-pli": true, "rtcp-fb-ccm-fir": true,
          ]),
      ])
      let video = try webrtc.addTransceiver(.receiveOnly, caps: videoCaps)
      // Lost video packets are asked for again (NACK), their retransmissions (RTX) taken.
      try video.set("do-nack", true)
      let audioCaps = Caps([
        try Structure(
          name: "application/x-rtp",
          [
            "media": "audio", "encoding-name": "OPUS", "payload": opus, "clock-rate": 48000,
            "encoding-params": "2", "useinbandfec": "1",
          ])
      ])
      _ = try webrtc.addTransceiver(.receiveOnly, caps: audioCaps)
      // Weakly: the pipeline holds webrtcbin, which holds the handler.
      webrtc.element.onPadAdded { [weak self] pad in self?.decode(pad) }
      try pipeline.play()
    } catch {
      pipeline.stop()
      throw RevueError(.gstreamer, "cannot start the WHEP receiver", underlying: error)
    }
    ended.target = self
  }

  /// Stops the pipeline and deletes the session on the server (in a task of its own): the
  /// participant was let go of without a disconnect.
  deinit {
    closed.store(true, ordering: .relaxed)
    pipeline.stop()
    if let (resource, token) = resource.withLock({ $0 }) {
      Task { await WHIPExchange.delete(resource, token: token, category: "WHEP") }
    }
  }

  /// The participant of the tracks the answer sends: a video track of `video`'s codec, an audio
  /// track when `audio`; their streams kept for the pads to come.
  private func participant(video codec: VideoCodec?, audio hasAudio: Bool) -> RemoteParticipant {
    let shown = WHIPPublication.redacted(endpoint)
    let videoTrack = codec.map { codec in
      let stream = Stream(session: self, name: "the WHEP video from \(shown)")
      let track = RemoteVideoTrack(name: "video", codec: codec, receiver: stream)
      stream.video.target = track
      video.target = stream
      return track
    }
    var audioTrack: RemoteAudioTrack?
    if hasAudio {
      let stream = Stream(session: self, name: "the WHEP audio from \(shown)")
      let track = RemoteAudioTrack(name: "audio", receiver: stream)
      stream.audio.target = track
      audio.target = stream
      audioTrack = track
    }
    return RemoteParticipant(videoTrack: videoTrack, audioTrack: audioTrack)
  }

  /// The offer, with every local candidate.
  private func offer(timeout: Duration) async throws(RevueError) -> String {
    do {
      let offer = try await webrtc.createOffer()
      try await webrtc.setLocalDescription(.offer, sdp: offer)
      reportOften()
      try await webrtc.gatheringComplete(timeout: timeout)
      return Self.withoutBundleOnly(webrtc.localDescription ?? offer)
    } catch {
      throw RevueError(.gstreamer, "cannot make the WebRTC offer", underlying: error)
    }
  }

  /// `offer` with every media section on port 9 and none `a=bundle-only`, as browsers offer:
  /// with `max-bundle` webrtcbin puts the sections after the first on port 0 (RFC 8843's
  /// bundle-only), which servers that read port 0 as a section turned down refuse (the node's
  /// own answered `400 malformed media line 'm=audio 0 …'`). The BUNDLE group still makes them
  /// share the first section's transport, as the answer says.
  static func withoutBundleOnly(_ offer: String) -> String {
    let lines = offer.split(separator: "\r\n", omittingEmptySubsequences: false)
    return lines.filter { $0 != "a=bundle-only" }.map { line in
      let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
      guard line.hasPrefix("m="), fields.count == 3, fields[1] == "0" else { return String(line) }
      return "\(fields[0]) 9 \(fields[2])"
    }.joined(separator: "\r\n")
  }

  /// Takes the server's answer and waits for the media connection.
  /// - Throws: ``RevueError`` (`.network`) for an answer that does not fit the offer, or a
  ///   connection not up within `timeout`.
  private func connect(answer: String, timeout: Duration) async throws(RevueError) {
    let shown = WHIPPublication.redacted(endpoint)
    do {
      try await webrtc.setRemoteDescription(.answer, sdp: answer)
    } catch {
      throw RevueError(.network, "the WHEP server \(shown)'s answer does not fit the offer", underlying: error)
    }
    reportOften()
    let state = await webrtc.connectionState(in: ["connected", "failed", "closed"], timeout: timeout)
    guard state == "connected" else {
      throw RevueError(
        .network,
        "the WebRTC connection to the WHEP server \(shown) did not come up within \(timeout)"
          + " (\(state.map { "it \($0)" } ?? "still \(webrtc.connectionState)"))")
    }
  }

  /// Sends receiver reports four times a second (``RTPSender/reportInterval``), as an RTP
  /// receiver does: at RFC 3550's 5 s a server that takes a viewer as gone after 3 s without
  /// RTCP (the node's own ``WebRTCBroadcast``, whose limit is browsers' pace) drops this one.
  /// Called once the descriptions make `webrtcbin`'s RTP sessions, before their first report.
  private func reportOften() {
    guard let rtpbin = webrtc.element.element(named: "rtpbin") as? Bin else { return }
    for session in rtpbin.elements where session.factoryName == "rtpsession" {
      try? session.set("rtcp-min-interval", UInt64(RTPSender.reportInterval))
    }
  }

  /// Returns once the first video packet came, and with it the codec the server sends (an
  /// answer may list several, and a server send any of them: aiortc's lists the offer's), or
  /// after `timeout`: a server that is slow to send is not an error, and the track's codec is
  /// then the answer's first until the packets say.
  private func firstVideo(within timeout: Duration) async {
    let codecs = videoCodecs.stream
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        for await _ in codecs { return }
      }
      group.addTask { try? await Task.sleep(for: timeout) }
      await group.next()
      group.cancelAll()
    }
  }

  /// Notes that the server was heard from.
  private func hear() { heard.withLock { $0 = .now } }

  /// Watches the connection once it is up, until the session closes: a connection that fails
  /// or closes, or a server that sends nothing for ``silence`` (`webrtcbin` checks no ICE
  /// consent: a server that vanished leaves the connection `connected`), ends the session as a
  /// fault of `webrtcbin`, which both tracks report.
  private func watchConnection() {
    let shown = WHIPPublication.redacted(endpoint)
    webrtc.onStateChange("connection-state") { [weak self] state in
      if state == "failed" || state == "closed" {
        self?.fail("the WebRTC connection to the WHEP server \(shown) \(state)")
      }
    }
    hear()
    webrtc.onRTCPReceived { [weak self] in self?.hear() }
    Task { [weak self] in
      while let session = self, !session.closed.load(ordering: .relaxed) {
        let silence = ContinuousClock.now - session.heard.withLock { $0 }
        if silence > Self.silence {
          let seconds = String(format: "%.1f", Double(silence / .milliseconds(1)) / 1000)
          session.fail("the WHEP server \(shown) stopped sending: nothing from it for \(seconds) s")
          return
        }
        try? await Task.sleep(for: .milliseconds(250))
      }
    }
  }

  /// Ends the session with `reason` as an error of `webrtcbin`, unless it was closed: the
  /// pipeline's owner reports it to both tracks, and the session ends.
  private func fail(_ reason: String) {
    if !closed.load(ordering: .relaxed) { webrtc.element.postError(reason) }
  }

  /// Stops receiving (both tracks stop); returns the server's session to delete and its token,
  /// the first time.
  private func close() -> (URL, String?)? {
    closed.store(true, ordering: .relaxed)
    pipeline.stop()
    for stream in [video.target, audio.target] { stream?.status.stopped() }
    return resource.withLock { resource in
      defer { resource = nil }
      return resource
    }
  }

  /// Stops receiving and deletes the session on the server (waited for up to 5 s), once.
  func end() async {
    guard let (resource, token) = close() else { return }
    await WHIPExchange.delete(resource, token: token, category: "WHEP")
  }

  // MARK: - Decoding

  /// Decodes a stream `webrtcbin` hands out (a new pad: one per stream received, as its first
  /// packet arrives) into its track: VP8 or H.264 video into I420 pictures, Opus into
  /// ``RemoteAudioTrack/format``. A stream of another kind, or with no track, is dropped.
  private func decode(_ pad: Pad) {
    guard pad.direction == .source else { return }
    let caps = pad.currentCaps ?? pad.queryCaps()
    let structure = caps.count > 0 ? caps.structure(at: 0) : nil
    let name = structure?.get("encoding-name", as: String.self)?.uppercased()
    let codec: VideoCodec? = name == "VP8" ? .vp8 : name == "H264" ? .h264 : nil
    let (chain, stream): (String?, Stream?) =
      switch (structure?.get("media", as: String.self), codec, name) {
      case ("video", let codec?, _): (RemoteVideoTrack.decodeChain(codec), video.target)
      case ("audio", _, "OPUS"): (RemoteAudioTrack.decodeChain, audio.target)
      default: (nil, nil)
      }
    if let codec, let stream, let track = stream.video.target {
      track.receives(codec)
      videoCodecs.continuation.yield(codec)
    }
    var description = "fakesink sync=false async=false"
    if let chain, stream != nil { description = "\(chain) ! appsink name=sink sync=false enable-last-sample=false" }
    do {
      let bin = try Bin(parsing: description)
      try pipeline.pipeline.add(bin)
      guard let input = bin.staticPad("sink") else { throw GStreamerError.noSuchPad(element: bin.name, pad: "sink") }
      if let stream, let sink = bin.element(named: "sink") as? AppSink {
        stream.attach(pad, sink: sink) { [weak self] in self?.hear() }
      }
      bin.syncStateWithParent()
      try pad.link(input)
      // A recording of the stream as it comes takes the frames the decoder is given.
      let decoder = bin.element(named: "decoder") ?? bin.elements.first { $0.factoryName == "opusdec" }
      if let stream, let decoderInput = decoder?.staticPad("sink") { stream.decodes(decoderInput) }
      if stream == nil {
        RevueLog.log(.info, "WHEP", "a stream of \(caps) is not played: it is dropped")
      }
    } catch {
      webrtc.element.postError("cannot decode the WHEP server's \(name ?? "unknown") stream: \(error)")
    }
  }

  // MARK: - A stream

  /// One medium of the session, the receiver of its track: its counters, its state and events,
  /// its stop (which ends the whole session).
  final class Stream: TrackReceiver {
    /// The session; held, so that it lives as long as a track.
    let session: WHEPSession
    /// Running, failed (the session's fault) or stopped.
    let status: StreamStatus
    /// Never sent: WHEP names no sender.
    let identities = Broadcast<String>()
    /// The video track the stream's pictures go to (for video).
    let video = Relay<RemoteVideoTrack>()
    /// The audio track the stream's buffers go to (for audio).
    let audio = Relay<RemoteAudioTrack>()

    /// What the stream received.
    private struct Counters {
      /// Frames (video) or buffers (audio) decoded.
      var frames = 0
      /// RTP packets out of `webrtcbin`, and their bytes (headers included).
      var packets = 0
      var bytes = 0
      /// The SSRC of the latest packet.
      var ssrc: UInt32?
      /// Keyframe requests let through, and when the latest went.
      var keyframeRequests = 0
      var lastKeyframeRequest: ContinuousClock.Instant?
      /// The bytes and time of the previous read of the statistics, for the bitrate.
      var read = (bytes: 0, time: ContinuousClock.now)
    }
    /// The counters, written on the streaming threads.
    private let counters = Locked(Counters())

    /// A stream of `session`, called `name` in the log.
    init(session: WHEPSession, name: String) {
      self.session = session
      let video = self.video
      // A video track's views clear once the stream stops or fails.
      status = StreamStatus(name: name) { video.target?.clearRenderers() }
    }

    /// The session's pipeline, shared by its video and audio.
    var pipeline: MediaPipeline { session.pipeline }

    /// The sink pad of the stream's decoder once made (at the stream's first packet), and the
    /// handlers waiting for it.
    private let decoderInput = Mutex<(pad: Pad?, waiting: [@Sendable (Pad) -> Void])>((nil, []))

    /// Calls `handler` with the sink pad of the stream's decoder (the depayloaded frames, or
    /// Opus packets, it decodes) at once when it is made already, or as soon as it is: what a
    /// recording of the stream as it comes taps.
    func whenDecoding(_ handler: @escaping @Sendable (Pad) -> Void) {
      let made = decoderInput.withLock { input -> Pad? in
        if input.pad == nil { input.waiting.append(handler) }
        return input.pad
      }
      if let made { handler(made) }
    }

    /// The stream's decoder was made, with `input` its sink pad: tells who waits for it.
    fileprivate func decodes(_ input: Pad) {
      let waiting = decoderInput.withLock { decoder in
        decoder.pad = input
        defer { decoder.waiting = [] }
        return decoder.waiting
      }
      for handler in waiting { handler(input) }
    }
    /// WHEP names no sender: nil.
    var cname: String? { nil }
    /// The server's WHEP URL, as messages show it.
    var placeholderIdentity: String { WHIPPublication.redacted(session.endpoint) }
    /// WHEP has no mute signal: false.
    var isMutedBySender: Bool { false }

    /// Ends the whole session (both tracks) and deletes it on the server.
    func stop() async { await session.end() }

    /// Asks the server for the smallest layer that covers `size` (nil: its own choice), when
    /// it offers layers.
    func adapt(to size: Dimensions?) { session.layerPreference.withLock { $0 }?.prefer(size) }

    /// Counts what `pad` (the stream's output of `webrtcbin`, after its jitter buffer) passes,
    /// and its keyframe requests (sending at most one every ``RTPReceiver/pictureLossInterval``
    /// on: the depayloader asks with each packet until a keyframe comes); hands each sample
    /// `sink` decodes to the track. `heard` is told of each packet.
    func attach(_ pad: Pad, sink: AppSink, heard: @escaping @Sendable () -> Void) {
      let counters = self.counters
      pad.addProbe([.buffer, .bufferList]) { _, info in
        let sizes = info.buffer.map { [$0.size] } ?? info.listSizes ?? []
        let ssrc = info.buffer?.rtpHeader?.ssrc
        counters.value.withLock { counters in
          counters.packets += sizes.count
          counters.bytes += sizes.reduce(0, +)
          if let ssrc { counters.ssrc = ssrc }
        }
        heard()
        return .ok
      }
      pad.addProbe(.eventUpstream) { _, info in
        guard info.event?.structure?.name == "GstForceKeyUnit" else { return .ok }
        let now = ContinuousClock.now
        let due = counters.value.withLock { counters in
          if let last = counters.lastKeyframeRequest, now - last < RTPReceiver.pictureLossInterval { return false }
          counters.lastKeyframeRequest = now
          counters.keyframeRequests += 1
          return true
        }
        return due ? .ok : .drop
      }
      let (video, audio) = (self.video, self.audio)
      sink.setCallbacks(newSample: { sample in
        counters.value.withLock { $0.frames += 1 }
        if let track = video.target {
          track.deliver(sample)
        } else {
          audio.target?.deliver(sample)
        }
      })
    }

    /// The counters now, with the losses, late packets, jitter and retransmissions of
    /// `webrtcbin`'s jitter buffer for the stream (the one whose output caps name its SSRC).
    /// WHEP's sender reports are not read: ``RemoteVideoTrack/Statistics/latency`` is nil.
    var statistics: RemoteVideoTrack.Statistics {
      let ssrc = counters.value.withLock { $0.ssrc }
      let jitterBuffer = ssrc.flatMap { ssrc in
        session.webrtc.element.allElements.first { element in
          element.factoryName == "rtpjitterbuffer"
            && element.staticPad("src")?.currentCaps.map {
              $0.count > 0 && $0.structure(at: 0).get("ssrc", as: UInt.self) == UInt(ssrc)
            } == true
        }
      }
      let stats = try? jitterBuffer?.get("stats", as: Structure.self)
      func count(_ field: String) -> Int { Int(stats?.get(field, as: UInt.self) ?? 0) }
      let now = ContinuousClock.now
      return counters.value.withLock { counters in
        let bitrate = RTPReceiver.bitrate(of: counters.bytes, since: &counters.read, at: now)
        return RemoteVideoTrack.Statistics(
          framesDecoded: counters.frames, packetsReceived: counters.packets, bytesReceived: counters.bytes,
          invalidPackets: 0, packetsLost: count("num-lost"), nacksSent: count("rtx-count"),
          packetsRetransmitted: count("rtx-success-count"), packetsRecovered: 0,
          keyframeRequests: counters.keyframeRequests, packetsLate: count("num-late"),
          jitter: .nanoseconds(Int64(count("avg-jitter"))), bitrate: bitrate, framesDropped: 0)
      }
    }
  }
}

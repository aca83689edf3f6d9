import Foundation
import GStreamer
import Synchronization

/// A local track sent to the room's destination: its codec, statistics and, over RTP, its
/// RTP/RTCP ports; to a WHIP endpoint, its own WebRTC session.
public final class LocalTrackPublication: Sendable {
  /// What a publication has sent.
  public struct Statistics: Sendable, Hashable {
    /// Frames the encoder produced.
    public var framesEncoded: Int
    /// Of those, keyframes.
    public var keyframes: Int
    /// RTP packets sent.
    public var packetsSent: Int
    /// RTP bytes sent (headers included).
    public var bytesSent: Int
    /// Bytes of the frames that reached an encoder in other memory than the track delivered them
    /// in: converted (`vp8enc` takes only I420, so NV12 frames are converted for VP8) or scaled
    /// (a smaller simulcast layer). 0 when the encoder takes the track's frames as they are, as
    /// H.264 takes NV12 and I420. Nil unless ``LocalTrackPublication/countsCopiedBytes`` was on
    /// when the publication was made: counting costs a lock per frame.
    public var bytesCopiedToEncoder: Int?
    /// Bits per second since the previous read of the statistics (or since the start).
    public var bitrate: Double
    /// What the latest RTCP receiver report said: the fraction lost since the one before (0…1).
    public var fractionLost: Double?
    /// Packets the receiver lost since the start, by its latest report.
    public var packetsLost: Int?
    /// The receiver's interarrival jitter, by its latest report.
    public var jitter: Duration?
    /// The round-trip time from the latest receiver report that answered a sender report.
    public var roundTripTime: Duration?
    /// Packets sent again because a receiver reported them missing (RTCP NACK); nil when the
    /// publication does not retransmit (``LossRecovery/nack`` off, and for audio).
    public var packetsRetransmitted: Int?
    /// Keyframes receivers asked for (RTCP PLI or FIR) since the start.
    public var keyframeRequests: Int
    /// Of those, the requests the encoder was asked to answer: requests closer than 250 ms to
    /// the last one answered are dropped, since the keyframe on its way answers them too.
    public var keyframeRequestsHonoured: Int
    /// The bitrate the congestion controller has the encoder aim at now, in bits per second,
    /// from the receiver reports (docs/congestion-control.md): at most the layer's
    /// ``VideoEncoding/maxBitrate``, where it starts. Added up over the layers in the
    /// publication's ``LocalTrackPublication/statistics``. Nil when
    /// ``VideoPublishOptions/adaptiveBitrate`` is off (the encoder keeps its bitrate) and for audio.
    public var targetBitrate: Int?
    /// Why ``targetBitrate`` last changed (the full-size stream's in the publication's
    /// ``LocalTrackPublication/statistics``); nil when ``targetBitrate`` is.
    public var targetBitrateReason: BitrateChangeReason?
    /// Whether the target fell so low for the size that every other frame is dropped before the
    /// encoder, to give the rest more bits (the full-size stream's in the publication's
    /// ``LocalTrackPublication/statistics``); false when ``targetBitrate`` is nil.
    public var frameRateHalved = false
  }

  /// The publication's id.
  public let sid: String
  /// What a publication sends.
  enum Media: Sendable, Hashable {
    /// Video layers, the full size first.
    case video(VideoCodec, [VideoParameters])
    case audio(AudioEncoding, dtx: Bool)
  }

  /// The track published: a ``LocalVideoTrack`` or a ``LocalAudioTrack``.
  public let track: Track
  let media: Media
  /// The video codec (nil for audio, which is Opus).
  public var codec: VideoCodec? {
    if case .video(let codec, _) = media { return codec }
    return nil
  }
  /// The video encoding of the full-size stream (nil for audio).
  public var encoding: VideoEncoding? { layers.first?.encoding }
  /// The video streams sent, the full size first: one, or one per simulcast layer, each on its
  /// own port pair from ``port`` upward, or told apart by RID in a WHIP session (the layers
  /// its endpoint took); empty for audio.
  public var layers: [VideoParameters] {
    if case .video(_, let layers) = media { return layers }
    return []
  }
  /// The audio encoding sent (nil for video).
  public var audioEncoding: AudioEncoding? {
    if case .audio(let encoding, _) = media { return encoding }
    return nil
  }
  /// The destination's RTP port of the first stream (RTCP is the next one); 0 for a WHIP
  /// publication, whose ports ICE chooses.
  public var port: Int { sender?.streams[0].port ?? 0 }
  /// The destination's RTP ports of every stream, as ``layers`` (none for WHIP).
  public var ports: [Int] { sender?.streams.map(\.port) ?? [] }
  /// The RTP synchronization source of the first stream (0 for WHIP: `webrtcbin`'s own).
  public var ssrc: UInt32 { sender?.streams[0].ssrc ?? 0 }
  /// The synchronization sources of every stream, as ``layers`` (none for WHIP).
  public var ssrcs: [UInt32] { sender?.streams.map(\.ssrc) ?? [] }
  /// The local port the first stream sends RTCP from and takes receiver reports on (0 for WHIP).
  public var localRTCPPort: Int { sender?.streams[0].rtcpPort ?? 0 }
  /// The RTP payload type.
  public var payloadType: Int { sender?.payloadType ?? (codec == nil ? 111 : 96) }
  /// The RTP clock rate, the unit of the timestamps and of the jitter receivers report: 90 kHz
  /// for video, 48 kHz for Opus (RFC 7587, whatever rate it samples at).
  var clockRate: Int { codec == nil ? 48_000 : 90_000 }

  /// Where the packets go.
  enum Transport: Sendable {
    /// RTP and RTCP to the room's host, on port pairs of their own.
    case rtp(RTPSender)
    /// A WebRTC session of a WHIP endpoint, for this track alone.
    case whip(WHIPPublication)
  }
  let transport: Transport
  /// The RTP sender; nil for WHIP.
  var sender: RTPSender? {
    if case .rtp(let sender) = transport { return sender }
    return nil
  }
  private let status: StreamStatus
  /// The element that encodes the video over RTP: `x264enc`, `vp8enc`, or a hardware encoder
  /// such as `vah264enc` or `v4l2h264enc`; nil for audio and WHIP.
  public let videoEncoder: String?
  /// Set when the hardware encoder tried first could not start and the software one encodes
  /// instead: a warning naming both, and why the hardware one failed. The room's
  /// ``Room/events`` carry it as this publication's fault. Nil otherwise.
  public let encoderFallback: MediaFault?
  /// Bytes and time at the previous read of the statistics, by stream (nil: all of them).
  private let created = ContinuousClock.now
  private let lastRead = Mutex<[Int?: (bytes: Int, time: ContinuousClock.Instant)]>([:])

  /// Publishes `layers` of a video track, the first at `port`, each next one two ports up;
  /// with `adaptiveBitrate`, each layer's bitrate follows its receiver reports; protected with
  /// `srtp` when it is given.
  ///
  /// The encoder is the machine's hardware encoder of `codec` when it has one
  /// (``VideoEncoder/Factory/preferred(for:environment:)``). When the sender cannot start with
  /// it (the device cannot be opened, the element refuses a setting), the sender is built again
  /// with the software encoder, and ``encoderFallback`` says so (a warning naming both, also
  /// sent to the room's events). A hardware encoder that fails later, once playing, fails the
  /// publication as any encoder does.
  init(
    video track: LocalVideoTrack, codec: VideoCodec, layers: [VideoParameters], recovery: LossRecovery = .nack,
    host: String, port: Int, adaptiveBitrate: Bool = true, srtp: SRTPKey? = nil
  ) throws(RevueError) {
    sid = Self.newSID()
    self.track = track
    media = .video(codec, layers)
    let status = StreamStatus(name: "the \(codec.rawValue) publication of \(track.name)")
    self.status = status
    let relay = Relay<LocalTrackPublication>()
    let start = {
      (factory: VideoEncoder.Factory, onFault: @escaping @Sendable (MediaFault) -> Void) throws(RevueError) in
      var streams: [RTPSender.Stream] = []
      for (index, layer) in layers.enumerated() {
        let chain: ElementChain
        do {
          chain = try VideoEncoder(codec, layer, scaled: index > 0, factory: factory).chain()
        } catch {
          throw RevueError(.gstreamer, "cannot describe the \(factory.rawValue) encoder of \(layer)", underlying: error)
        }
        streams.append(
          RTPSender.Stream(
            chain: chain, port: port + 2 * index, adaptation: adaptiveBitrate ? Self.adaptation(for: layer) : nil))
      }
      return try RTPSender(
        name: codec.rawValue, streams: streams, payloadType: 96, host: host, frameRate: layers[0].encoding.maxFps,
        recovery: recovery, srtp: srtp, countsCopies: Self.countsCopiedBytes, onFault: onFault)
    }
    let preferred = VideoEncoder.Factory.preferred(for: codec)
    var used = preferred
    let sender: RTPSender
    if preferred.isHardware {
      // Until the hardware sender plays, its faults are its start's: kept, not the publication's.
      let starting = Locked<[MediaFault]?>([])
      let handler = Self.faultHandler(status, relay)
      let onFault: @Sendable (MediaFault) -> Void = { fault in
        let kept = starting.value.withLock { faults in
          faults?.append(fault)
          return faults != nil
        }
        if !kept { handler(fault) }
      }
      do {
        sender = try start(preferred, onFault)
        // Playing: what it said while starting (warnings) is the publication's, as what follows.
        let said = starting.value.withLock { faults in
          defer { faults = nil }
          return faults ?? []
        }
        said.forEach(handler)
        encoderFallback = nil
      } catch {
        let software = VideoEncoder.Factory.software(for: codec)
        let why = starting.value.withLock { $0?.first { $0.severity == .error } }.map(\.description) ?? "\(error)"
        let fallback = MediaFault(
          severity: .warning, element: preferred.rawValue,
          message: "the hardware encoder \(preferred.rawValue) could not start (\(why)): encoding with "
            + "\(software.rawValue) instead")
        status.report(fallback, ends: false)
        encoderFallback = fallback
        used = software
        sender = try start(software, Self.faultHandler(status, relay))
      }
    } else {
      encoderFallback = nil
      sender = try start(preferred, Self.faultHandler(status, relay))
    }
    videoEncoder = used.rawValue
    transport = .rtp(sender)
    relay.target = self
    track.attach(sender)
  }

  /// Publishes an audio track (Opus) at `port`, protected with `srtp` when it is given.
  init(
    audio track: LocalAudioTrack, encoding: AudioEncoding, dtx: Bool, host: String, port: Int, srtp: SRTPKey? = nil
  ) throws(RevueError) {
    sid = Self.newSID()
    self.track = track
    media = .audio(encoding, dtx: dtx)
    (videoEncoder, encoderFallback) = (nil, nil)
    let chain = AudioEncoder(encoding: encoding, dtx: dtx).chain()
    status = StreamStatus(name: "the opus publication of \(track.name)")
    let relay = Relay<LocalTrackPublication>()
    let sender = try RTPSender(
      name: "opus", streams: [RTPSender.Stream(chain: chain, port: port)], payloadType: 111, host: host, srtp: srtp,
      onFault: Self.faultHandler(status, relay))
    transport = .rtp(sender)
    relay.target = self
    track.attach(sender)
  }

  /// A publication of `track` in a WHIP session of its own, which sends `media`.
  init(whip: WHIPPublication, track: Track, media: Media) {
    sid = Self.newSID()
    self.track = track
    self.media = media
    (videoEncoder, encoderFallback) = (nil, nil)
    status = whip.status
    transport = .whip(whip)
  }

  /// Whether publications made from now on measure ``Statistics/bytesCopiedToEncoder``: off by
  /// default, as it costs a lock and a look at each frame's memory (the bench turns it on).
  public static var countsCopiedBytes: Bool {
    get { copyCounting.load(ordering: .relaxed) }
    set { copyCounting.store(newValue, ordering: .relaxed) }
  }
  private static let copyCounting = Atomic(false)

  /// Reports the sender's faults; an error ends the publication (the track stops feeding it).
  private static func faultHandler(_ status: StreamStatus, _ publication: Relay<LocalTrackPublication>)
    -> @Sendable (MediaFault) -> Void
  {
    { fault in
      guard status.report(fault), let publication = publication.target else { return }
      publication.detach()
    }
  }

  /// Whether the publication is sending, failed (and why), or was unpublished.
  public var state: StreamState { status.state }

  /// The publication's changes from now on: faults of its pipeline (GStreamer's text and the
  /// element's path) and the end of the publication.
  public var events: AsyncStream<StreamEvent> { status.events }

  /// The threads `vp8enc` encodes a size with, by libwebrtc's rule: one up to 640×480 or on
  /// fewer than three cores (more threads only spin against each other there), two above
  /// 640×480, three with six cores or more, eight for 1080p and up with more than eight cores.
  public static func vp8Threads(for size: Dimensions, cores: Int = ProcessInfo.processInfo.activeProcessorCount)
    -> Int
  {
    switch size.area {
    case (1920 * 1080)... where cores > 8: 8
    case (640 * 480 + 1)... where cores >= 6: 3
    case (640 * 480 + 1)... where cores >= 3: 2
    default: 1
    }
  }

  private static func newSID() -> String {
    "PU_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12)
  }

  /// The counters now and the bitrate since the previous read: frames and keyframes are the
  /// full-size stream's, packets, bytes, bitrate and target bitrate are added up over every
  /// stream, and the RTCP fields and the target's reason are the full-size stream's.
  public var statistics: Statistics {
    guard let sender else { return statistics(layer: 0)! }
    let all = sender.streams.indices.map(sender.statistics)
    var total = all[0]
    total.packetsSent = all.map(\.packetsSent).reduce(0, +)
    total.bytesSent = all.map(\.bytesSent).reduce(0, +)
    total.packetsRetransmitted = all[0].packetsRetransmitted.map { _ in
      all.compactMap(\.packetsRetransmitted).reduce(0, +)
    }
    total.bytesCopiedToEncoder =
      all.allSatisfy { $0.bytesCopiedToEncoder != nil }
      ? all.compactMap(\.bytesCopiedToEncoder).reduce(0, +) : nil
    var statistics = statistics(total, key: nil)
    let targets = sender.streams.compactMap { $0.adaptation?.state }
    if let full = targets.first, targets.count == sender.streams.count {
      statistics.targetBitrate = targets.map(\.target).reduce(0, +)
      statistics.targetBitrateReason = full.reason
      statistics.frameRateHalved = full.halvesFrameRate
    }
    return statistics
  }

  /// The counters of one stream (an index of ``layers``), and its bitrate since the previous
  /// read of this layer's statistics. A WHIP session counts its layers together, as layer 0.
  public func statistics(layer: Int) -> Statistics? {
    guard case .rtp(let sender) = transport else {
      guard layer == 0, case .whip(let whip) = transport else { return nil }
      var statistics = statistics(whip.counters, key: 0)
      let target = whip.statistics
      (statistics.targetBitrate, statistics.targetBitrateReason) = (target.targetBitrate, target.targetBitrateReason)
      return statistics
    }
    guard sender.streams.indices.contains(layer) else { return nil }
    var statistics = statistics(sender.statistics(layer), key: layer)
    if let state = sender.streams[layer].adaptation?.state {
      statistics.targetBitrate = state.target
      statistics.targetBitrateReason = state.reason
      statistics.frameRateHalved = state.halvesFrameRate
    }
    return statistics
  }

  /// The congestion control of a layer's stream: from its maxBitrate (or `start`) down to where
  /// its frame rate halves and below.
  static func adaptation(
    for layer: VideoParameters, start: Int? = nil, retransmissionPolicy: RetransmissionBudget.Policy = .rtp
  ) -> BitrateAdaptation {
    BitrateAdaptation(
      ceiling: layer.encoding.maxBitrate,
      halvingFloor: BitrateController.halvingFloor(
        width: Int(layer.dimensions.width), height: Int(layer.dimensions.height), fps: layer.encoding.maxFps),
      start: start, retransmissionPolicy: retransmissionPolicy)
  }

  /// The index of the stream (of ``layers``; 0 for audio) each RTCP receiver report from now
  /// on is about, as it arrives; read ``statistics(layer:)`` for what it said.
  /// Over WHIP the reports stay in `webrtcbin`, and the stream ends at once.
  public func receiverReports() -> AsyncStream<Int> {
    guard let sender else { return AsyncStream { $0.finish() } }
    return sender.reports.subscribe(bufferingPolicy: .bufferingNewest(8))
  }

  private func statistics(_ counters: RTPSender.Counters, key: Int?) -> Statistics {
    let now = ContinuousClock.now
    let bitrate = lastRead.withLock { reads in
      let last = reads[key] ?? (0, created)
      reads[key] = (counters.bytesSent, now)
      let seconds = Double((now - last.time) / .microseconds(1)) / 1e6
      return seconds > 0 ? Double(counters.bytesSent - last.bytes) * 8 / seconds : 0
    }
    return Statistics(
      framesEncoded: counters.framesEncoded, keyframes: counters.keyframes, packetsSent: counters.packetsSent,
      bytesSent: counters.bytesSent, bytesCopiedToEncoder: counters.bytesCopiedToEncoder, bitrate: bitrate,
      fractionLost: counters.report?.fractionLost,
      packetsLost: counters.report.map { Int($0.packetsLost) },
      jitter: counters.report.map { .microseconds(Int64($0.jitter) * 1_000_000 / Int64(clockRate)) },
      roundTripTime: counters.roundTrip, packetsRetransmitted: counters.packetsRetransmitted,
      keyframeRequests: counters.keyframeRequests.received,
      keyframeRequestsHonoured: counters.keyframeRequests.honoured)
  }

  /// Stops sending; returns, for a WHIP publication, the task that tells the endpoint.
  @discardableResult
  func stop() -> Task<Void, Never>? {
    switch transport {
    case .rtp(let sender):
      detach()
      sender.stop()
      status.stopped()
      return nil
    case .whip(let whip):
      return whip.stopSending()
    }
  }

  /// Stops the track feeding the sender.
  private func detach() {
    guard let sender else { return }
    (track as? LocalVideoTrack)?.detach(sender)
    (track as? LocalAudioTrack)?.detach(sender)
  }

  /// The SDP media sections a receiver opens for this publication: one per stream. Smaller
  /// simulcast layers are marked `a=content:alt` (RFC 4796) and carry their size in
  /// `a=imageattr` (RFC 6236), so a player takes the full size first. With SRTP the profile is
  /// `RTP/SAVPF` and each section carries the key in `a=crypto` (SDES, RFC 4568).
  /// A WHIP publication has none: its endpoint is what receivers open.
  func sdpMedia() -> [String] {
    guard let sender else { return [] }
    let profile = sender.srtp == nil ? "RTP/AVPF" : "RTP/SAVPF"
    return sender.streams.enumerated().map { index, stream in
      var lines: [String]
      switch media {
      case .video(let codec, let layers):
        let layer = layers[index]
        let recovery = sender.recovery
        let rtx = LossRecovery.rtxPayloadType
        let fec = LossRecovery.fecPayloadType
        let types =
          [payloadType] + (recovery.contains(.nack) ? [rtx] : []) + (recovery.contains(.fec) ? [fec] : [])
          + (recovery.isSuperset(of: [.nack, .fec]) ? [LossRecovery.fecRTXPayloadType] : [])
        lines = [
          "m=video \(stream.port) \(profile) \(types.map(String.init).joined(separator: " "))",
          "a=rtpmap:\(payloadType) \(codec.encodingName)/90000",
        ]
        if codec == .h264 { lines.append("a=fmtp:\(payloadType) packetization-mode=1;profile-level-id=42e01f") }
        if recovery.contains(.nack) { lines.append("a=rtcp-fb:\(payloadType) nack") }
        lines += ["a=rtcp-fb:\(payloadType) nack pli", "a=rtcp-fb:\(payloadType) ccm fir"]
        if recovery.contains(.nack) { lines += ["a=rtpmap:\(rtx) rtx/90000", "a=fmtp:\(rtx) apt=\(payloadType)"] }
        if recovery.contains(.fec) { lines.append("a=rtpmap:\(fec) ulpfec/90000") }
        if recovery.isSuperset(of: [.nack, .fec]) {
          let fecRTX = LossRecovery.fecRTXPayloadType
          lines += ["a=rtpmap:\(fecRTX) rtx/90000", "a=fmtp:\(fecRTX) apt=\(fec)"]
        }
        lines.append("a=framerate:\(layer.encoding.maxFps)")
        if layers.count > 1 {
          lines += [
            "a=content:\(index == 0 ? "main" : "alt")",
            "a=imageattr:\(payloadType) send [x=\(layer.dimensions.width),y=\(layer.dimensions.height)]",
          ]
        }
      case .audio(_, let dtx):
        // opus/48000/2 whatever is sent (RFC 7587); stereo and sprop-stereo say what it is.
        let stereo = (track as? LocalAudioTrack)?.format.channelCount == 2 ? 1 : 0
        lines = [
          "m=audio \(stream.port) \(profile) \(payloadType)", "a=rtpmap:\(payloadType) opus/48000/2",
          "a=fmtp:\(payloadType) useinbandfec=1;usedtx=\(dtx ? 1 : 0);stereo=\(stereo);sprop-stereo=\(stereo)",
        ]
      }
      if let key = sender.srtp { lines.append(key.cryptoAttribute) }
      lines += ["a=rtcp:\(stream.port + 1)", "a=ssrc:\(stream.ssrc) cname:\(Self.cname)"]
      if sender.recovery.contains(.nack) {
        lines += ["a=ssrc:\(stream.rtxSSRC) cname:\(Self.cname)", "a=ssrc-group:FID \(stream.ssrc) \(stream.rtxSSRC)"]
      }
      lines.append("a=sendonly")
      return lines.joined(separator: "\r\n")
    }
  }

  /// The RTCP CNAME of this process's streams.
  static let cname = "revue-\(ProcessInfo.processInfo.processIdentifier)@\(ProcessInfo.processInfo.hostName)"
}

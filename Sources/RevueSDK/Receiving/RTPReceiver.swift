import Foundation
import GStreamer
import Synchronization

/// The receive pipeline of one stream:
/// `udpsrc ! rtpsession ! [rtpstorage] ! [rtprtxreceive] ! rtpjitterbuffer ! [rtpulpfecdec] !
/// depayloader ! decoder ! appsink`, with RTCP in on the next port and receiver reports back to
/// where the sender reports come from. A sender that restarts (new SSRC, new sequence numbers)
/// is followed; garbage packets are counted and dropped; a decoder that cannot go on asks for a
/// keyframe (RTCP PLI).
///
/// Loss recovery (``LossRecovery``): with NACK the jitter buffer asks for a missing packet
/// (rtpsession sends the RTCP NACK) and `rtprtxreceive` turns the sender's retransmissions back
/// into the packets they carry; with FEC `rtpstorage` keeps the packets that came and
/// `rtpulpfecdec` rebuilds a lost one from them when the jitter buffer gives up on it. The jitter
/// buffer passes packets on as soon as they are in order, so its latency costs nothing while
/// nothing is lost: it is how long a missing packet is waited for.
///
/// SRTP: `srtpdec` sits between the sockets and the session, and checks and decrypts RTP and
/// RTCP with the one key (it asks for it per SSRC); a packet that fails is dropped there, and the
/// sender's address is learned only from packets that passed. What the receiver sends back
/// (reports, and the NACKs and PLIs built here) goes through `srtpenc` (SRTCP): a sender drops
/// plain RTCP.
///
/// Source filtering: with a source, packets to either socket from any other host are counted
/// and dropped before anything else reads them.
final class RTPReceiver: Sendable {
  struct Counters: Sendable {
    var frames = 0
    var packets = 0
    var bytes = 0
    var invalid = 0
    /// Packets dropped because they came from another host than the source.
    var foreign = 0
    var cname: String?
    /// Whether the sender's reports say its track is muted (or its camera off): the SDES NOTE
    /// of ``RTPSender/signal(muted:)``.
    var muted = false
    /// Where feedback goes: where the sender's RTCP comes from or, until its first report,
    /// where its media comes from (Revue's senders send both from one socket).
    var senderAddress: (host: String, port: Int)?
    /// The sender followed, when more than one sends to the port.
    var latch = SenderLatch()
    /// When the followed sender's latest packet (media or RTCP) came; nil before the first.
    var lastHeard: ContinuousClock.Instant?
    /// Whether the sender left (``RTPReceiver/leaveTimeout``, or its RTCP BYE).
    var left = false
    /// The latest RTCP BYE of the sender followed: when, and the SSRCs that said goodbye. It
    /// stands while only those SSRCs are heard (packets in flight).
    var goodbye: (at: ContinuousClock.Instant, ssrcs: Set<UInt32>)?
    /// Packets dropped because another sender is followed.
    var otherSenders = 0
    /// The SSRC of the media the receiver follows.
    var mediaSSRC: UInt32? { latch.ssrc }

    /// Judges a packet at the media socket (``SenderLatch``). Returns whether to take it, and
    /// whether its source address should become where feedback goes: when no report gave one
    /// yet, for the first packet, and for the first of a new sender, whose reports come later.
    mutating func admit(
      ssrc: UInt32, sequence: UInt16, payloadType: Int, of mediaType: Int, from source: SenderLatch.Address?,
      at now: ContinuousClock.Instant
    ) -> (take: Bool, learn: Bool) {
      let first = latch.ssrc == nil
      switch latch.media(
        ssrc: ssrc, sequence: sequence, payloadType: payloadType, of: mediaType, from: source, at: now)
      {
      case .drop:
        otherSenders += 1
        return (false, false)
      case .pass: return (true, false)
      case .newSender: return (true, !first || senderAddress == nil)
      }
    }

    /// Sequence numbers asked for again (RTCP NACK), and keyframes asked for (RTCP PLI).
    var nacks = 0
    var pictureLosses = 0
    /// When the latest keyframe request went out.
    var lastPictureLoss: ContinuousClock.Instant?
    var read = (bytes: 0, time: ContinuousClock.now)
    /// The latest sender report: the sender's wall-clock time of an RTP timestamp.
    var senderReport: RTCPSenderInfo?
    /// The synchronization source of the latest packet.
    var ssrc: UInt32?
    /// Frames out of the jitter buffer not decoded yet, oldest first: their time in this
    /// pipeline and their RTP timestamp.
    var inFlight: [(pts: ClockTime, rtp: UInt32)] = []
    var dropped = 0
    /// Latencies of the frames decoded since the previous read, in NTP units (2⁻³² s).
    var latencies = (sum: 0.0, count: 0)

    /// Notes a packet out of the jitter buffer (one entry a frame: its packets share a time).
    mutating func arrived(pts: ClockTime, rtp: UInt32, ssrc: UInt32) {
      self.ssrc = ssrc
      guard inFlight.last?.pts != pts else { return }
      inFlight.append((pts, rtp))
      if inFlight.count > 128 { inFlight.removeFirst(inFlight.count - 128) }
    }

    /// Notes a decoded frame: the frames before it that were never decoded are dropped, and its
    /// latency is measured against the sender's clock.
    /// - Returns: the sender's wall-clock time of the frame's capture (NTP format), once a sender
    ///   report maps its RTP timestamp.
    mutating func decoded(pts: ClockTime?, clockRate: Int) -> UInt64? {
      frames += 1
      guard let pts, let index = inFlight.firstIndex(where: { $0.pts == pts }) else { return nil }
      dropped += index
      defer { inFlight.removeFirst(index + 1) }
      guard let report = senderReport else { return nil }
      let sent = report.ntpTime(ofRTPTimestamp: inFlight[index].rtp, clockRate: clockRate)
      let elapsed = Int64(bitPattern: RTCPSenderInfo.ntpNow() &- sent)
      // A frame older than a minute means a report of another stream, or a clock jump.
      if elapsed >= 0, elapsed < 60 << 32 { latencies = (latencies.sum + Double(elapsed), latencies.count + 1) }
      return sent
    }
  }

  let port: Int
  /// The sender's CNAME, each time it is learned or changes.
  let identities = Broadcast<String>()
  /// Running, failed or stopped, with the pipeline's faults.
  let status: StreamStatus
  let pipeline: MediaPipeline
  private let counters = Locked(Counters())
  private let jitterBuffer: Element
  /// What the SRTP decoder holds, and the packets dropped before it; nil for plain RTP.
  private let decoderStreams: SRTPKey.DecoderStreams?

  /// Binds `port` (RTP) and `port + 1` (RTCP) on `address` and starts decoding, handing each
  /// decoded sample to `deliver` on the streaming thread.
  /// - Parameters:
  ///   - payloadTypes: the media's payload type (`caps` says it too), and those of its loss
  ///     recovery.
  ///   - capsFields: the fields of the stream's caps (`media=video,clock-rate=90000,…`), without
  ///     the media type: the socket's caps are `application/x-rtp` with them, or with SRTP
  ///     `application/x-srtp`.
  ///   - srtp: the key of an SRTP stream; nil for plain RTP.
  ///   - source: the numeric address of the one host packets are taken from; nil for any.
  ///   - decode: from the jitter buffer to raw media; a video decoder is named `decoder`.
  ///   - muted: called on the RTCP thread when the sender's reports say its track became muted
  ///     (true) or unmuted (false).
  ///   - ended: called once when the receiver stops or fails.
  ///   - left: called once, from a task, when the sender leaves: its RTCP BYE came and no other
  ///     sender took its place within ``goodbyeGrace``, or nothing came from it for
  ///     `leaveTimeout` after it had sent; with why.
  ///   - leaveTimeout: how long a sender may send nothing before it counts as gone; nil: it
  ///     never does (a BYE is not acted on either), and the receiver follows whoever sends next.
  ///   - deliver: called with each decoded sample and the sender's wall-clock time of its
  ///     capture (NTP format), once a sender report maps it.
  /// - Throws: ``RevueError`` naming the port in use or the missing element.
  init(
    address: String, port: Int, clockRate: Int, payloadTypes: RTPPayloadTypes, capsFields: String, decode: String,
    latency: Int, recovery: LossRecovery = [], srtp: SRTPKey? = nil, source: String? = nil,
    muted: @escaping @Sendable (Bool) -> Void, ended: @escaping @Sendable () -> Void = {},
    left: @escaping @Sendable (String) -> Void = { _ in }, leaveTimeout: Duration? = RTPReceiver.leaveTimeout,
    deliver: @escaping @Sendable (Sample, _ captured: UInt64?) -> Void
  ) throws(RevueError) {
    self.port = port
    self.left = left
    self.leaveTimeout = leaveTimeout
    let decoderStreams = srtp.map { _ in SRTPKey.DecoderStreams() }
    self.decoderStreams = decoderStreams
    let status = StreamStatus(name: "the receiver on port \(port)", ended: ended)
    self.status = status
    let payloadType = payloadTypes.media
    // Only what the sender offers: retransmissions need their payload type, FEC its.
    let fecPayloadType = recovery.contains(.fec) ? payloadTypes.fec : nil
    let rtxMap = recovery.contains(.nack) ? payloadTypes.rtxMap(fec: fecPayloadType != nil) : nil
    let nack = rtxMap != nil
    let beforeJitter =
      (fecPayloadType != nil ? "rtpstorage name=storage size-time=\(UInt64(latency + 100) * 1_000_000) ! " : "")
      + (rtxMap.map { "rtprtxreceive name=rtx payload-type-map=\"\($0)\" ! " } ?? "")
    let afterJitter = fecPayloadType.map { "rtpulpfecdec name=fec pt=\($0) ! " } ?? ""
    let secure = srtp != nil
    // With SRTP: the sockets' packets go through srtpdec, and RTCP out (with the feedback built
    // here, pushed into `feedback`) through srtpenc.
    let caps = "application/x-rtp,\(capsFields)"
    let socketCaps = secure ? "application/x-srtp,\(capsFields)" : caps
    let decrypt = secure ? "srtpdec.rtp_sink srtpdec.rtp_src ! " : ""
    let decryptRTCP = secure ? "caps=application/x-srtcp ! srtpdec.rtcp_sink srtpdec.rtcp_src ! " : "! "
    let encryptRTCP =
      secure
      ? "funnel name=rtcpmix forward-sticky-events=false ! srtpenc.rtcp_sink_0 srtpenc.rtcp_src_0 ! "
        + "udpsink name=rtcpout host=127.0.0.1 port=9 sync=false async=false "
        + "appsrc name=feedback is-live=true format=time caps=application/x-rtcp ! rtcpmix. "
        + "srtpdec name=srtpdec srtpenc name=srtpenc"
      : "udpsink name=rtcpout host=127.0.0.1 port=9 sync=false async=false"
    let description = """
      udpsrc name=rtpin address=\(address) port=\(port) reuse=false caps="\(socketCaps)" \
      ! \(decrypt)session.recv_rtp_sink rtpsession name=session rtp-profile=avpf rtcp-min-interval=\(RTPSender.reportInterval) \
      session.recv_rtp_src ! \(beforeJitter)\(Self.jitterBuffer(latency: latency, nack: nack).launchDescription) \
      ! \(afterJitter)\(decode) \
      ! appsink name=sink sync=false enable-last-sample=false \
      udpsrc name=rtcpin address=\(address) port=\(port + 1) reuse=false \(decryptRTCP)session.recv_rtcp_sink \
      session.send_rtcp_src ! \(encryptRTCP)
      """
    do {
      pipeline = try MediaPipeline(parsing: description) { status.report($0) }
      jitterBuffer = try pipeline.pipeline.element(named: "jitter", as: Element.self)
      let session = try pipeline.pipeline.element(named: "session", as: Element.self)
      let rtcpIn = try pipeline.pipeline.element(named: "rtcpin", as: Element.self)
      try pipeline.pipeline.element(named: "rtpin", as: Element.self).setState(.ready)
      try rtcpIn.setState(.ready)
      try rtcpIn.shareSocket(with: try pipeline.pipeline.element(named: "rtcpout", as: Element.self))
      try? pipeline.pipeline.element(named: "decoder")?.set("automatic-request-sync-points", true)
      if let storage = pipeline.pipeline.element(named: "storage"), let fec = pipeline.pipeline.element(named: "fec") {
        try fec.set("storage", toObjectIn: "internal-storage", of: storage)
      }
      let send: @Sendable ([UInt8], _ to: (host: String, port: Int)) -> Bool
      if let srtp, let decoderStreams {
        srtp.configure(
          decoder: try pipeline.pipeline.element(named: "srtpdec", as: Element.self), streams: decoderStreams)
        let encoder = try pipeline.pipeline.element(named: "srtpenc", as: Element.self)
        try srtp.configure(encoder: encoder)
        SRTPKey.keepKey(inside: encoder)
        // Protected by srtpenc, and sent by `rtcpout`, which sends to the same sender address.
        let feedback = try pipeline.pipeline.element(named: "feedback", as: AppSrc.self)
        send = { packet, _ in (try? feedback.push(Buffer(copying: packet))) != nil }
      } else {
        send = { packet, sender in rtcpIn.sendDatagram(packet, to: sender.host, port: sender.port) }
      }
      Self.sendFeedbackAtOnce(from: session, send: send, counters: counters)
    } catch {
      throw RevueError(
        .invalidInput, "cannot receive on \(address):\(port)-\(port + 1) (is the port in use?)", underlying: error)
    }
    if let source { Self.takeOnly(from: source, in: pipeline.pipeline, counters: counters) }
    Task { [weak self] in
      while self?.watchesSilence() ?? false { try? await Task.sleep(for: .milliseconds(250)) }
    }
    let counters = self.counters
    let identities = self.identities
    let rtcpOut = try? pipeline.pipeline.element(named: "rtcpout", as: Element.self)
    /// Receiver reports and feedback go back to where the sender's reports come from
    /// (symmetric RTCP). The RTP and RTCP threads both learn it, one at a time: `udpsink` frees
    /// its old host when set, while a port set on another thread compares clients with it (a
    /// use after free ASan caught in CI).
    let feedbackDestination = Locked(())
    let sendFeedback = { @Sendable (sender: (host: String, port: Int)) in
      feedbackDestination.value.withLock { _ in
        try? rtcpOut?.set("host", sender.host)
        try? rtcpOut?.set("port", sender.port)
      }
    }
    /// Takes a media packet (plain, or decrypted and authenticated) if it is the followed
    /// sender's, and learns where feedback goes from it.
    let admit = {
      @Sendable (buffer: Buffer, header: (ssrc: UInt32, payloadType: Int, sequence: UInt16, timestamp: UInt32)) -> Bool
      in
      let source = buffer.senderAddress
      let (take, learns) = counters.value.withLock { counters in
        let judged = counters.admit(
          ssrc: header.ssrc, sequence: header.sequence, payloadType: header.payloadType, of: payloadType,
          from: source, at: .now)
        if judged.take {
          counters.lastHeard = .now
          // Another sender (a restarted one) took the place of the one that said goodbye.
          if counters.goodbye?.ssrcs.contains(header.ssrc) == false { counters.goodbye = nil }
        }
        return judged
      }
      if learns, let source {
        counters.value.withLock { $0.senderAddress = source }
        sendFeedback(source)
      }
      if !take {
        RevueLog.log(.debug, "Receiver", "packet dropped: SSRC \(header.ssrc) is not the sender followed")
      }
      return take
    }
    pipeline.pipeline.element(named: "rtpin")?.staticPad("src")?.addProbe(.buffer) { _, info in
      guard let buffer = info.buffer else { return .ok }
      let header = buffer.rtpHeader
      counters.value.withLock { counters in
        guard header != nil else {
          counters.invalid += 1
          return
        }
        counters.packets += 1
        counters.bytes += buffer.size
      }
      guard let header else {
        RevueLog.log(.debug, "Receiver", "packet dropped: not RTP (\(buffer.size) bytes)")
        return .drop
      }
      return secure || admit(buffer, header) ? .ok : .drop
    }
    // With SRTP only what passed authentication says where the sender is, and RTCP is read
    // once decrypted.
    let decoder = pipeline.pipeline.element(named: "srtpdec")
    decoder?.staticPad("rtp_src")?.addProbe(.buffer) { _, info in
      guard let buffer = info.buffer, let header = buffer.rtpHeader else { return .ok }
      return admit(buffer, header) ? .ok : .drop
    }
    let rtcpReceived = decoder?.staticPad("rtcp_src") ?? pipeline.pipeline.element(named: "rtcpin")?.staticPad("src")
    rtcpReceived?.addProbe(.buffer) { _, info in
      guard let buffer = info.buffer else { return .ok }
      let descriptions = buffer.rtcpSourceDescriptions.values
      let name = descriptions.lazy.compactMap { $0[.cname] }.first
      // Early reports carry the CNAME only: a report without the note says nothing of muting.
      let note = descriptions.lazy.compactMap { $0[.note] }.first
      let sender = buffer.senderAddress
      let report = buffer.rtcpSenderInfo
      let reporter = buffer.rtcpReporterSSRC
      let none = (taken: false, moved: false, renamed: false, muted: Bool?.none)
      let (taken, moved, renamed, mute) = counters.value.withLock { counters -> (Bool, Bool, Bool, Bool?) in
        switch counters.latch.control(reporterSSRC: reporter, from: sender, at: .now) {
        case .take: break
        case .ignore: return none
        case .drop:
          counters.otherSenders += 1
          return none
        }
        if let report { counters.senderReport = report }
        counters.lastHeard = .now
        if let goodbye = counters.goodbye, let reporter, !goodbye.ssrcs.contains(reporter) { counters.goodbye = nil }
        let goodbyes = buffer.rtcpGoodbyeSSRCs
        if !goodbyes.isEmpty { counters.goodbye = (.now, Set(goodbyes)) }
        let renamed = name != nil && name != counters.cname
        if let name { counters.cname = name }
        var mute: Bool?
        if let note, [RTPSender.mutedNote, RTPSender.unmutedNote].contains(note),
          counters.muted != (note == RTPSender.mutedNote)
        {
          counters.muted.toggle()
          mute = counters.muted
        }
        guard let sender, counters.senderAddress.map({ $0 != sender }) ?? true else {
          return (true, false, renamed, mute)
        }
        counters.senderAddress = sender
        return (true, true, renamed, mute)
      }
      guard taken else {
        RevueLog.log(
          .debug, "Receiver", "RTCP dropped: from \(sender?.host ?? "?"):\(sender?.port ?? 0), not the sender followed")
        return .drop
      }
      if renamed, let name { identities.send(name) }
      if let mute { muted(mute) }
      if moved, let sender { sendFeedback(sender) }
      return .ok
    }
    do {
      let sink = try pipeline.pipeline.element(named: "sink", as: AppSink.self)
      jitterBuffer.staticPad("src")?.addProbe(.buffer) { _, info in
        guard let buffer = info.buffer, let pts = buffer.pts, let header = buffer.rtpHeader else { return .ok }
        counters.value.withLock { $0.arrived(pts: pts, rtp: header.timestamp, ssrc: header.ssrc) }
        return .ok
      }
      if let fecPayloadType, let pad = jitterBuffer.staticPad("src") {
        Self.nameTheStream(on: pad, counters)
        // FEC packets share the stream's sequence numbers under a payload type of their own.
        let media = try Caps(caps)
        let fec = try Caps("application/x-rtp,media=video,clock-rate=\(clockRate),payload=\(fecPayloadType)")
        jitterBuffer.answerPayloadTypeMap { pt in
          pt == payloadType ? media : pt == fecPayloadType ? fec : nil
        }
        // The FEC packets have served once they are stored (rtpulpfecdec finds them there, and
        // numbers the media packets it passes on anew); the depayloader must not see them.
        pipeline.pipeline.element(named: "fec")?.staticPad("sink")?.addProbe(.buffer) { _, info in
          info.buffer?.rtpHeader?.payloadType == fecPayloadType ? .drop : .ok
        }
      }
      // A decoder that cannot go on asks for a keyframe upstream, and the jitter buffer for a
      // missing packet; rtpsession turns them into an RTCP PLI or NACK once they name the
      // stream, which the jitter buffer does not know without rtpbin's demuxers.
      jitterBuffer.staticPad("sink")?.addProbe(.eventUpstream) { _, info in
        guard var request = info.event?.structure, let ssrc = counters.value.withLock({ $0.ssrc }) else { return .ok }
        switch request.name {
        case "GstForceKeyUnit" where !request.hasField("ssrc"):
          try? request.set("payload", UInt32(payloadType))
          RevueLog.log(.debug, "Receiver", "the decoder cannot go on: asking the sender for a keyframe")
        case "GstRTPRetransmissionRequest" where request.get("ssrc", as: UInt.self).map({ $0 == UInt32.max }) ?? true:
          break
        default:
          return .ok
        }
        try? request.set("ssrc", ssrc)
        info.event = .customUpstream(request)
        return .ok
      }
      sink.setCallbacks(newSample: { sample in
        let pts = sample.buffer?.pts
        let captured = counters.value.withLock { $0.decoded(pts: pts, clockRate: clockRate) }
        deliver(sample, captured)
      })
      try pipeline.play()
    } catch {
      throw RevueError(.gstreamer, "the receiver on port \(port) cannot start", underlying: error)
    }
  }

  /// The jitter buffer, named `jitter`: it waits `latency` milliseconds at most for a missing
  /// packet, asks for it (with `nack`) ``nackDelayMilliseconds`` after it was due and again
  /// every ``nackRetryMilliseconds``, and says it lost (a `GstRTPPacketLost` event) what did not
  /// come in time; it passes each packet on as soon as those before it are there.
  static func jitterBuffer(latency: Int, nack: Bool) -> ElementRecipe {
    ElementRecipe(
      "rtpjitterbuffer", name: "jitter",
      [
        "latency": .int(latency), "do-retransmission": .bool(nack), "rtx-retry-timeout": .int(nackRetryMilliseconds),
        "rtx-min-delay": .int(nackDelayMilliseconds), "do-lost": .bool(true), "faststart-min-packets": .int(1),
        "max-misorder-time": .int(misorderMilliseconds), "max-dropout-time": .int(dropoutMilliseconds),
      ])
  }

  /// How far back, in time, a packet may come and still be taken as late rather than as the
  /// start of a new stream: a sender that restarts picks new sequence numbers at random, and
  /// with rtpjitterbuffer's 2 s the new stream waited up to that long, taken for old packets.
  static let misorderMilliseconds = 500
  /// How far ahead a packet may jump and still be taken as following a loss rather than as
  /// the start of a new stream (rtpjitterbuffer's default, a minute, waited for a restarted
  /// sender whose numbers came a little ahead).
  static let dropoutMilliseconds = 2_000

  /// How many times the first NACK for a packet is sent (its retries go
  /// ``retryNACKCopies`` times, after ``nackRetryMilliseconds``). A lost NACK or a lost
  /// retransmission costs a round trip more, and a retry at 30 ± 10 ms each way keeps the
  /// picture still past 200 ms; each copy that arrives brings a retransmission, so through 5%
  /// loss each way the first request fails once in 11,000 (0.0975⁴) rather than once in ten,
  /// for 64 bytes more and up to three retransmissions more of each lost packet. With three
  /// copies it failed once in a thousand: about one 720p trial in fifteen (70 lost packets)
  /// retried a packet, and CI saw a 215 ms freeze. Measured: docs/loss-recovery.md.
  static let firstNACKCopies = 4
  /// How many times a retried NACK is sent: a packet whose first request failed has used part
  /// of its wait, and when every later round fails too the jitter buffer gives it up, which
  /// costs a keyframe and half a second of picture (at 10% loss each way with one copy, a
  /// 240-frame VP8 run gave up a packet: 91% of its frames intact, a 612 ms freeze; with two,
  /// an H.264 720p run in CI gave up one of 138 lost packets: 93% intact, a 395 ms freeze). A
  /// copy fails when it or its retransmission is lost (0.19 at 10% each way), so with three a
  /// round fails once in 145 (0.19³) rather than once in 28, for 16 bytes more a retry.
  static let retryNACKCopies = 3
  /// How long after a packet was due a NACK for it goes out at the earliest: the jitter buffer
  /// expects each packet from the pace of the ones before, and on a path that jitters by 10 ms
  /// it asked for packets that were only late (VP8, no loss: 79 requests and 237 resends for
  /// 580 packets; with 25 ms, 7 and 21, and the same freezes through loss).
  static let nackDelayMilliseconds = 25
  /// How long a NACK waits for its packet before it is sent again: longer than the round trip
  /// of the paths the tests measure (40–80 ms), so that a retry goes only for a request that
  /// failed (the jitter buffer's own estimate retried nearly every packet).
  static let nackRetryMilliseconds = 120

  /// Gives the caps after the jitter buffer the stream's SSRC, which `rtpulpfecdec` needs (it
  /// aborts the process on a lost packet without it; rtpbin's demuxer would set it): in the
  /// first caps, once the first packet named it, and in new caps when a sender restarts with
  /// another SSRC.
  private static func nameTheStream(on pad: Pad, _ counters: Locked<Counters>) {
    let named = Locked<UInt32?>(nil)
    pad.addProbe([.eventDownstream, .buffer]) { pad, info in
      if var caps = info.event?.caps {
        guard let ssrc = counters.value.withLock({ $0.mediaSSRC }) else { return .ok }
        try? caps.setField("ssrc", UInt32(ssrc))
        named.value.withLock { $0 = ssrc }
        info.event = .caps(caps)
      } else if let ssrc = info.buffer?.rtpHeader?.ssrc, named.value.withLock({ $0 }) != ssrc,
        var caps = pad.currentCaps
      {
        try? caps.setField("ssrc", ssrc)
        named.value.withLock { $0 = ssrc }
        _ = pad.push(event: .caps(caps))
      }
      return .ok
    }
  }

  /// The least time between two keyframe requests (RTCP PLI) of a receiver: a lost request is
  /// sent again after it.
  static let pictureLossInterval = Duration.milliseconds(100)

  /// Sends the jitter buffer's requests for a missing packet (RTCP NACK) and the depayloader's
  /// and decoder's for a keyframe (RTCP PLI) at once, from the RTCP socket to the sender's RTCP
  /// address. rtpsession would send them with its next report, and RFC 4585's early-feedback
  /// rule lets it send one early report per report interval (a quarter second here): a lost packet would
  /// wait for its NACK longer than the jitter buffer waits for the packet. A request that comes
  /// before the first sender report, whose address is not known yet, is left to rtpsession.
  /// `send` sends one packet to the sender's RTCP address (from the RTCP socket, through
  /// `srtpenc` with SRTP) and says whether it went.
  private static func sendFeedbackAtOnce(
    from session: Element, send: @escaping @Sendable ([UInt8], _ to: (host: String, port: Int)) -> Bool,
    counters: Locked<Counters>
  ) {
    session.staticPad("recv_rtp_src")?.addProbe(.eventUpstream) { _, info in
      guard let request = info.event?.structure,
        request.name == "GstRTPRetransmissionRequest" || request.name == "GstForceKeyUnit",
        let media = request.get("ssrc", as: UInt.self).flatMap(UInt32.init(exactly:)),
        let sender = counters.value.withLock({ $0.senderAddress }),
        case .uint(let own)? = try? session.property("internal-ssrc", ofObjectIn: "internal-session"),
        let own = UInt32(exactly: own)
      else { return .ok }
      let packet: [UInt8]
      if request.name == "GstForceKeyUnit" {
        // Until a keyframe comes the depayloader asks for one with each packet; one request
        // per interval is enough, and the others go nowhere (not even to rtpsession).
        let now = ContinuousClock.now
        let due = counters.value.withLock { counters in
          if let last = counters.lastPictureLoss, now - last < pictureLossInterval { return false }
          counters.lastPictureLoss = now
          return true
        }
        guard due else { return .drop }
        packet = RTCPFeedback.pictureLoss(from: own, media: media)
      } else if let number = request.get("seqnum", as: UInt.self).flatMap(UInt16.init(exactly:)) {
        packet = RTCPFeedback.nack(from: own, media: media, sequenceNumbers: [number])
      } else {
        return .ok
      }
      let first = request.get("retry", as: UInt.self).map { $0 == 0 } ?? true
      let copies = request.name == "GstRTPRetransmissionRequest" ? (first ? firstNACKCopies : retryNACKCopies) : 1
      guard (0..<copies).allSatisfy({ _ in send(packet, sender) }) else {
        return .ok
      }
      counters.value.withLock { counters in
        if request.name == "GstForceKeyUnit" { counters.pictureLosses += 1 } else { counters.nacks += 1 }
      }
      return .drop
    }
  }

  /// Drops, and counts, every packet to the RTP and RTCP sockets that does not come from
  /// `source` (a numeric address), before anything else reads it.
  private static func takeOnly(from source: String, in pipeline: Pipeline, counters: Locked<Counters>) {
    for socket in ["rtpin", "rtcpin"] {
      pipeline.element(named: socket)?.staticPad("src")?.addProbe(.buffer) { _, info in
        guard let buffer = info.buffer, buffer.senderAddress?.host != source else { return .ok }
        counters.value.withLock { $0.foreign += 1 }
        RevueLog.log(
          .debug, "Receiver", "packet dropped: from \(buffer.senderAddress?.host ?? "an unknown host"), not \(source)")
        return .drop
      }
    }
  }

  func stop() {
    pipeline.stop()
    status.stopped()
  }

  /// How long a sender that sent may send nothing (no media, no RTCP report) before it counts
  /// as gone, by default: 10 s, Revue's report interval (``RTPSender/reportInterval``) forty
  /// times over, and beyond the outages a link recovers from (5 s, `LinkRecoveryTests`).
  static let leaveTimeout = Duration.seconds(10)

  /// How long after a sender's RTCP BYE another sender may take its place (a restarted
  /// publication: a new SSRC) before the sender counts as gone.
  static let goodbyeGrace = Duration.seconds(1)

  /// Called once when the sender leaves, with why.
  private let left: @Sendable (String) -> Void
  /// How long the sender may send nothing before it counts as gone.
  private let leaveTimeout: Duration?

  /// Marks the sender gone; true the first time only.
  private static func leaves(_ counters: Locked<Counters>) -> Bool {
    counters.value.withLock { counters in
      guard !counters.left else { return false }
      counters.left = true
      return true
    }
  }

  /// Tells ``left`` when the sender has been silent for ``leaveTimeout``; returns whether to
  /// go on watching (the receiver runs and the sender has not left).
  private func watchesSilence() -> Bool {
    guard let leaveTimeout, status.state == .running else { return false }
    let (heard, goodbye, gone) = counters.value.withLock { ($0.lastHeard, $0.goodbye?.at, $0.left) }
    guard !gone else { return false }
    let now = ContinuousClock.now
    let reason: String
    if let goodbye, now - goodbye > Self.goodbyeGrace {
      reason = "its RTCP BYE came"
    } else if let heard, now - heard > leaveTimeout {
      reason = "nothing came from it for \(leaveTimeout)"
    } else {
      return true
    }
    guard Self.leaves(counters) else { return false }
    RevueLog.log(.info, "Receiver", "the sender on port \(port) left: \(reason)")
    left(reason)
    return false
  }

  var cname: String? { counters.value.withLock { $0.cname } }

  /// Whether the sender's latest full report says its track is muted.
  var isMutedBySender: Bool { counters.value.withLock { $0.muted } }

  /// Bits per second from `read` (the bytes counted and the time at the previous read of a
  /// receiver's statistics) to `bytes` at `now`, 0 for no time; `read` becomes `bytes` at `now`,
  /// the start of the next interval.
  static func bitrate(
    of bytes: Int, since read: inout (bytes: Int, time: ContinuousClock.Instant), at now: ContinuousClock.Instant
  ) -> Double {
    let elapsed = now - read.time
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    defer { read = (bytes, now) }
    return seconds > 0 ? Double(bytes - read.bytes) * 8 / seconds : 0
  }

  /// An unsigned counter property of `element`; 0 without the element.
  private static func count(_ property: String, of element: Element?) -> Int {
    guard let element, case .uint(let value)? = try? element.property(property) else { return 0 }
    return Int(value)
  }

  var statistics: RemoteVideoTrack.Statistics {
    let stats = (try? jitterBuffer.get("stats", as: Structure.self))
    let retransmitted = Self.count("num-rtx-assoc-packets", of: pipeline.pipeline.element(named: "rtx"))
    let recovered = Self.count("recovered", of: pipeline.pipeline.element(named: "fec"))
    let decoderStats = try? pipeline.pipeline.element(named: "srtpdec")?.get("stats", as: Structure.self)
    let unauthenticated =
      Int(decoderStats?.get("recv-drop-count", as: UInt.self) ?? 0) + (decoderStreams?.dropped ?? 0)
    let now = ContinuousClock.now
    return counters.value.withLock { counters in
      let bitrate = Self.bitrate(of: counters.bytes, since: &counters.read, at: now)
      let latencies = counters.latencies
      counters.latencies = (0, 0)
      return RemoteVideoTrack.Statistics(
        framesDecoded: counters.frames, packetsReceived: counters.packets, bytesReceived: counters.bytes,
        invalidPackets: counters.invalid, packetsUnauthenticated: unauthenticated,
        packetsFromOtherSources: counters.foreign, packetsFromOtherSenders: counters.otherSenders,
        packetsLost: Int(stats?.get("num-lost", as: UInt.self) ?? 0),
        nacksSent: counters.nacks, packetsRetransmitted: retransmitted, packetsRecovered: recovered,
        keyframeRequests: counters.pictureLosses,
        packetsLate: Int(stats?.get("num-late", as: UInt.self) ?? 0),
        jitter: .nanoseconds(Int64(stats?.get("avg-jitter", as: UInt.self) ?? 0)), bitrate: bitrate,
        framesDropped: counters.dropped,
        latency: latencies.count == 0
          ? nil : .nanoseconds(Int64(latencies.sum / Double(latencies.count) / 4_294_967_296 * 1e9)))
    }
  }
}

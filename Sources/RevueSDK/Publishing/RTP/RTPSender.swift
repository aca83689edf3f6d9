import GStreamer
import Synchronization

/// The send pipeline of one publication, built element by element: the media of
/// ``MediaPipeline/addMedia(from:source:branches:)`` (one branch per stream) and RTP's tail:
///
///     appsrc ! encoder chain ! payloader ! rtpbin ! udpsink                 (one stream)
///     appsrc ! tee ! per stream: queue ! encoder chain ! payloader ! rtpbin ! udpsink
///
/// Each stream (one, or one per simulcast layer) is its own `rtpbin` session with its own SSRC
/// and port pair, with RTCP both ways: sender reports go out from the socket that receives the
/// receiver reports (symmetric RTCP), and no receiving port of the destination is ever bound here.
/// `rtpbin`'s pads are requested in code, after `rtpbin` is configured, so that loss recovery
/// (aux senders for RTX and FEC, connected before the pads are requested) slots in here.
///
/// Time: every buffer sent carries its capture time on the system clock (see ``MediaPipeline``);
/// the sender's ``SourceFeed`` maps it into its own running time (PTS and DTS), so RTP timestamps and the RTCP
/// sender reports' NTP↔RTP mapping say when the media was captured, whatever pipeline it came
/// from (`rtcp-sync-send-time=false`: the reports map capture time, not send time, so the
/// encoder's delay does not shift one stream against another).
final class RTPSender: MediaSink {
  /// What one stream has done so far.
  struct Counters: Sendable, Hashable {
    var framesEncoded = 0
    var keyframes = 0
    var packetsSent = 0
    var bytesSent = 0
    /// Bytes of frames that reached the encoder in other memory than they were sent in; nil
    /// unless the sender counts copies.
    var bytesCopiedToEncoder: Int?
    /// The latest receiver report on this stream, if one came.
    var report: RTCPReportBlock?
    /// The round-trip time that report gave.
    var roundTrip: Duration?
    /// Keyframe requests (RTCP PLI or FIR) the receivers sent.
    var keyframeRequests = KeyframeRequests()
    /// RTCP packets dropped because they came from another host than the destination.
    var feedbackFromOtherHosts = 0
    /// Packets sent again at a receiver's request (RTX), when the stream retransmits.
    var packetsRetransmitted: Int?
  }

  /// Keyframe requests (RTCP PLI or FIR) from receivers.
  struct KeyframeRequests: Sendable, Hashable {
    /// Requests that came.
    var received = 0
    /// Requests passed to the encoder (the others came too soon after the last one).
    var honoured = 0
  }

  /// One RTP stream of the sender: a layer of a simulcast publication, or its only stream.
  struct Stream: Sendable {
    /// From the raw media to the payloader (``VideoEncoder/chain(encoderName:)``); the sender
    /// names the payloader and sets its `pt`, `ssrc` and `mtu`.
    var chain: ElementChain
    let ssrc = UInt32.random(in: 1..<UInt32.max)
    /// The SSRC of the stream's retransmissions (RFC 4588), when it retransmits.
    let rtxSSRC = UInt32.random(in: 1..<UInt32.max)
    /// The destination's RTP port; RTCP goes to the next one.
    var port: Int
    /// The local port RTCP is sent from and received on, once bound.
    fileprivate(set) var rtcpPort = 0
    fileprivate let counters = Locked(Counters())
    /// Fits the stream's encoder to the receiver reports (congestion control); nil: the
    /// encoder keeps its configured bitrate.
    var adaptation: BitrateAdaptation?

    /// The counters now.
    var statistics: Counters { counters.value.withLock { $0 } }
  }

  /// Every receiver report on one of the streams, as the index of that stream.
  let reports = Broadcast<Int>()
  /// What is sent, for messages: `vp8`, `h264`, `opus`.
  let name: String
  let payloadType: Int
  /// How the streams recover lost packets.
  let recovery: LossRecovery
  /// The key every stream is protected with (SRTP and SRTCP), or nil for plain RTP.
  let srtp: SRTPKey?
  /// The streams, in the order they were given (the full-size layer first).
  let streams: [Stream]
  /// Where the streams go.
  private let host: String
  let pipeline: MediaPipeline
  /// Takes the track's media to the pipeline's `appsrc`, timed by capture.
  private let feed: SourceFeed
  /// The memory of the buffers sent last, to tell at the encoders whether a frame was copied;
  /// nil when the sender does not count copies (the frame path then has no lock for it).
  private let sent: Locked<[Int]>?
  /// Whether the reports say the track is muted (``signal(muted:)``).
  private let signalledMuted = Mutex(false)

  /// Builds and starts the pipeline, sending every stream to `host`.
  /// - Parameters:
  ///   - frameRate: for video, the rate the encoders are set for.
  ///   - countsCopies: whether ``Counters/bytesCopiedToEncoder`` is measured (a map and a lock
  ///     per frame, for the bench and tests).
  ///   - srtp: the key that protects the streams (SRTP, with SRTCP both ways), or nil for plain RTP.
  ///   - onFault: called on the posting thread for each warning and for the error that stops the sender.
  /// - Throws: ``RevueError`` naming the missing element or the socket that could not be opened.
  init(
    name: String, streams: [Stream], payloadType: Int, host: String, frameRate: Int? = nil,
    recovery: LossRecovery = [], srtp: SRTPKey? = nil, countsCopies: Bool = false,
    onFault: @escaping @Sendable (MediaFault) -> Void
  ) throws(RevueError) {
    precondition(!streams.isEmpty, "a sender sends at least one stream")
    self.name = name
    self.recovery = recovery
    self.srtp = srtp
    self.host = host
    feed = SourceFeed(frameRate: frameRate)
    self.payloadType = payloadType
    let sent = countsCopies ? Locked<[Int]>([]) : nil
    self.sent = sent
    var streams = streams
    pipeline = MediaPipeline(name: "\(name)-sender", onFault: onFault)
    do {
      let rtpbin = try Element.make("rtpbin", name: "rtpbin", as: Bin.self)
      try rtpbin.set("rtp-profile", Value.enumeration("avpf"))
      try rtpbin.set("rtcp-sync-send-time", false)
      try rtpbin.set("sdes", try Self.sourceDescription(muted: false))
      try pipeline.pipeline.add(rtpbin)
      let chains = try streams.indices.map { index throws(GStreamerError) in
        var chain = streams[index].chain.payloading(as: "payloader", payloadType: payloadType)
        chain.last.set("ssrc", .uint(UInt(streams[index].ssrc)))
        chain.last.set("mtu", .int(Self.mtu))
        let tail = try recovery.senderChain(
          payloadType: payloadType, ssrc: streams[index].ssrc, rtxSSRC: streams[index].rtxSSRC, index: index)
        return (name: "stream\(index)", chain: chain + tail)
      }
      let branches = try pipeline.addMedia(from: feed, source: SourceFeed.source(), branches: chains)
      for index in streams.indices {
        streams[index].rtcpPort = try Self.addSession(
          index, streams[index], branches[index], srtp: srtp, host: host, to: rtpbin, in: pipeline.pipeline,
          reports: reports, sent: sent)
      }
      // Sender reports four times a second, not RFC 3550's once in five: a receiver lines audio
      // and video up, and learns the latency, from the first second on, and the round-trip
      // times congestion control reads off the receiver reports are at most a quarter second
      // old.
      for session in rtpbin.elements where session.factoryName == "rtpsession" {
        try session.set("rtcp-min-interval", UInt64(Self.reportInterval))
      }
    } catch {
      throw RevueError(.gstreamer, "cannot build the \(name) sender", underlying: error)
    }
    self.streams = streams
    do {
      try pipeline.play()
    } catch {
      throw RevueError(.gstreamer, "the \(name) sender to \(host):\(streams[0].port) cannot start", underlying: error)
    }
  }

  /// The least time between two RTCP reports of a stream, in nanoseconds, the sender's and the
  /// receiver's (``RTPReceiver``): congestion control reads every receiver report, and a
  /// bottleneck's 100 ms buffer overflows within a second of the stream outgrowing it. About
  /// 100 bytes each way four times a second: 1.3 % of a 250 kb/s link.
  static let reportInterval = 250_000_000

  /// Adds session `index` of `rtpbin`: from the stream's `chain` (its encoder, payloader and
  /// loss recovery), its RTP and RTCP sockets. Returns the local RTCP port.
  ///
  /// With SRTP, the session's `srtpenc` protects what leaves `rtpbin` (RTP, its retransmissions
  /// and FEC, and RTCP) and its `srtpdec` checks and decrypts the RTCP that comes back (receiver
  /// reports and feedback): a packet that fails authentication is dropped there.
  private static func addSession(
    _ index: Int, _ stream: Stream, _ chain: Bin, srtp: SRTPKey?, host: String, to rtpbin: Bin, in pipeline: Pipeline,
    reports: Broadcast<Int>, sent: Locked<[Int]>?
  ) throws -> Int {
    let rtpOut = try udpSink(name: "rtpout\(index)", host: host, port: stream.port)
    let rtcpOut = try udpSink(name: "rtcpout\(index)", host: host, port: stream.port + 1)
    let rtcpIn = try Element.make("udpsrc", name: "rtcpin\(index)")
    try rtcpIn.set("port", Int32(0))
    try rtcpIn.set("address", "0.0.0.0")
    try pipeline.add(rtpOut, rtcpOut, rtcpIn)
    try chain.staticPad("src")!.link(try rtpbin.requestPad("send_rtp_sink_\(index)"))
    let rtpSource = rtpbin.staticPad("send_rtp_src_\(index)")!
    let rtcpSource = try rtpbin.requestPad("send_rtcp_src_\(index)")
    let rtcpSink = try rtpbin.requestPad("recv_rtcp_sink_\(index)")
    // The pad RTCP from the receivers comes out of, readable: the socket's, or the decoder's.
    let rtcpReceived: Pad
    if let srtp {
      let encoder = try srtp.encoder(name: "srtpenc\(index)")
      let decoder = try srtp.decoder(name: "srtpdec\(index)")
      try rtcpIn.set("caps", try Caps("application/x-srtcp"))
      try pipeline.add(encoder, decoder)
      try rtpSource.link(try encoder.requestPad("rtp_sink_0"))
      try encoder.staticPad("rtp_src_0")!.link(rtpOut.staticPad("sink")!)
      try rtcpSource.link(try encoder.requestPad("rtcp_sink_0"))
      try encoder.staticPad("rtcp_src_0")!.link(rtcpOut.staticPad("sink")!)
      try rtcpIn.staticPad("src")!.link(decoder.staticPad("rtcp_sink")!)
      rtcpReceived = decoder.staticPad("rtcp_src")!
      SRTPKey.keepKey(inside: encoder)
    } else {
      try rtpSource.link(rtpOut.staticPad("sink")!)
      try rtcpSource.link(rtcpOut.staticPad("sink")!)
      rtcpReceived = rtcpIn.staticPad("src")!
    }
    try rtcpReceived.link(rtcpSink)
    acceptFeedback(onlyFrom: host, at: rtcpIn.staticPad("src")!, counters: stream.counters)
    // RTP out, RTCP in and RTCP out on one socket: bind it first, then share it. A receiver
    // then knows where to send feedback from the first packet, before the first report.
    try rtcpIn.setState(.ready)
    try rtcpIn.shareSocket(with: rtcpOut)
    try rtcpIn.shareSocket(with: rtpOut)
    count(
      stream, encoder: chain.element(named: "encoder"), rtpOut: rtpOut, rtcpOut: rtcpSource, rtcpIn: rtcpReceived,
      sent: sent
    ) {
      reports.send(index)
    }
    limitKeyframeRequests(on: chain.element(named: "payloader")) { honoured in
      stream.counters.value.withLock { counters in
        counters.keyframeRequests.received += 1
        if honoured { counters.keyframeRequests.honoured += 1 }
      }
    }
    return (try? rtcpIn.get("port", as: Int.self)) ?? 0
  }

  /// Drops the RTCP that reaches the stream's socket from any host but `destination` (the
  /// receiver's address; any host for a multicast group), before it is decrypted or read:
  /// receiver reports and feedback steer the encoder (100% loss reports take the bitrate to the
  /// floor, NACKs and PLIs cost retransmissions and keyframes), and anyone who can reach the
  /// port could otherwise send them. The port is the receiver's choice (a NAT may change it),
  /// the address is not.
  private static func acceptFeedback(onlyFrom destination: String, at pad: Pad, counters: Locked<Counters>) {
    guard !isMulticast(destination) else { return }
    let destination = destination.lowercased()
    pad.addProbe(.buffer) { _, info in
      guard var host = info.buffer?.senderAddress?.host.lowercased() else { return .ok }
      if host.hasPrefix("::ffff:") { host.removeFirst(7) }
      if host == destination { return .ok }
      let first = counters.value.withLock { counters in
        counters.feedbackFromOtherHosts += 1
        return counters.feedbackFromOtherHosts == 1
      }
      if first {
        RevueLog.log(.info, "Publication", "RTCP from \(host) dropped: feedback is taken from \(destination) only")
      }
      return .drop
    }
  }

  /// Whether `address` is an IPv4 (224.0.0.0/4) or IPv6 (ff00::/8) multicast group.
  static func isMulticast(_ address: String) -> Bool {
    if address.contains(":") { return address.lowercased().hasPrefix("ff") }
    return address.split(separator: ".").first.flatMap { Int($0) }.map { (224...239).contains($0) } ?? false
  }

  /// The largest RTP packet sent, in bytes: room for SRTP and tunnel headers on a 1500-byte path.
  static let mtu = 1200

  /// The least time between two keyframes made at a receiver's request: a receiver that lost
  /// a keyframe asks again, and several receivers ask at once, but each keyframe costs several
  /// frames' worth of bits, so requests within this time of the last one honoured are dropped.
  static let keyframeRequestInterval = Duration.milliseconds(250)

  /// Passes keyframe requests (rtpsession turns RTCP PLI and FIR into `GstForceKeyUnit` events
  /// upstream, and an RTSP media's new client asks for one) from the payloader to the encoder
  /// at most once every ``keyframeRequestInterval``, telling `counted` of each request whether it
  /// was honoured.
  static func limitKeyframeRequests(on payloader: Element?, counted: @escaping @Sendable (Bool) -> Void) {
    let last = Mutex<ContinuousClock.Instant?>(nil)
    payloader?.staticPad("src")?.addProbe(.eventUpstream) { _, info in
      guard info.event?.structure?.name == "GstForceKeyUnit" else { return .ok }
      let now = ContinuousClock.now
      let honoured = last.withLock { last in
        if let previous = last, now - previous < keyframeRequestInterval { return false }
        last = now
        return true
      }
      counted(honoured)
      if !honoured { RevueLog.log(.debug, "Publication", "keyframe request dropped: one was honoured just before") }
      return honoured ? .ok : .drop
    }
  }

  /// Counts the frames `encoder` makes, and its keyframes, in `counters`.
  static func countFrames(leaving encoder: Element?, in counters: Locked<Counters>) {
    encoder?.staticPad("src")?.addProbe(.buffer) { _, info in
      let isKey = info.buffer.map { !$0.flags.contains(.deltaUnit) } ?? false
      counters.value.withLock { counters in
        counters.framesEncoded += 1
        if isKey { counters.keyframes += 1 }
      }
      return .ok
    }
  }

  /// Counts the RTP packets that pass `pad`, and their bytes, in `counters`.
  static func countPackets(through pad: Pad?, in counters: Locked<Counters>) {
    pad?.addProbe([.buffer, .bufferList]) { _, info in
      let sizes = info.listSizes ?? [info.buffer?.size ?? 0]
      counters.value.withLock { counters in
        counters.packetsSent += sizes.count
        counters.bytesSent += sizes.reduce(0, +)
      }
      return .ok
    }
  }

  /// Counts what a stream encodes and sends, and keeps the receiver reports on it (read on
  /// `rtcpIn`, where RTCP from the receivers is plain), handing them to its adaptation, if it
  /// has one. The round-trip time of a report is measured on the monotonic clock against when
  /// the sender report it answers left `rtcpOut` (``SentReports``).
  private static func count(
    _ stream: Stream, encoder: Element?, rtpOut: Element, rtcpOut: Pad, rtcpIn: Pad, sent: Locked<[Int]>?,
    reported: @escaping @Sendable () -> Void
  ) {
    let counters = stream.counters
    if let sent {
      counters.value.withLock { $0.bytesCopiedToEncoder = 0 }
      encoder?.staticPad("sink")?.addProbe(.buffer) { _, info in
        guard let buffer = info.buffer, let address = buffer.dataAddress.map({ Int(bitPattern: $0) }) else {
          return .ok
        }
        let copied = !sent.value.withLock { $0.contains(address) }
        if copied { counters.value.withLock { $0.bytesCopiedToEncoder? += buffer.size } }
        return .ok
      }
    }
    countFrames(leaving: encoder, in: counters)
    countPackets(through: rtpOut.staticPad("sink"), in: counters)
    let ssrc = stream.ssrc
    stream.adaptation?.attach(to: encoder)
    readReports(
      on: { ssrc }, rtcpOut: [rtcpOut], rtcpIn: [rtcpIn], counters: counters, adaptation: stream.adaptation,
      reported: reported)
  }

  /// Reads the receiver reports on the stream `ssrc()` names (0: not known yet) that pass any
  /// of `rtcpIn` (plain RTCP from the receivers), and their estimates of the path (REMB), which
  /// cap `adaptation`'s target; each report with its round-trip time, measured on the
  /// monotonic clock against when the sender report it answers passed one of `rtcpOut`
  /// (``SentReports``): keeps the latest in `counters`, hands it to `adaptation` with the
  /// counters then, and calls `reported`.
  static func readReports(
    on ssrc: @escaping @Sendable () -> UInt32, rtcpOut: [Pad], rtcpIn: [Pad], counters: Locked<Counters>,
    adaptation: BitrateAdaptation?, reported: @escaping @Sendable () -> Void = {}
  ) {
    let sentReports = Locked(SentReports())
    for pad in rtcpOut {
      pad.addProbe(.buffer) { _, info in
        guard let report = info.buffer?.rtcpSenderInfo else { return .ok }
        let now = ContinuousClock.now
        sentReports.value.withLock { $0.note(ntpTime: report.ntpTime, at: now) }
        return .ok
      }
    }
    for pad in rtcpIn {
      pad.addProbe(.buffer) { _, info in
        let arrival = ContinuousClock.now
        let ssrc = ssrc()
        guard ssrc != 0, let buffer = info.buffer else { return .ok }
        if let adaptation, let estimate = buffer.rtcpReceiverEstimate,
          estimate.ssrcs.isEmpty || estimate.ssrcs.contains(ssrc)
        {
          adaptation.receiverEstimated(estimate.bitsPerSecond)
        }
        guard let block = buffer.rtcpReportBlocks.last(where: { $0.ssrc == ssrc }) else { return .ok }
        let roundTrip = sentReports.value.withLock { $0.roundTrip(of: block, arrival: arrival) }
        counters.value.withLock { counters in
          counters.report = block
          counters.roundTrip = roundTrip ?? counters.roundTrip
        }
        adaptation?.reported(block, roundTrip: roundTrip, sent: counters.value.withLock { $0 })
        reported()
        return .ok
      }
    }
  }

  /// The sender reports a stream sent lately, by their NTP time's middle 32 bits (which a
  /// receiver report echoes as LSR), with when each left on the monotonic clock. rtpbin stamps
  /// its reports with the wall clock (`ntp-time-source` ntp, which receivers need: they measure
  /// the latency from capture against their own wall clock), and a round trip read as the wall
  /// clock now minus LSR and DLSR moved by as much as the wall clock stepped in between (NTP
  /// adjusting it, an operator setting it): one report of seconds, which congestion control took
  /// for a queue. Read against the monotonic time the report left, it cannot move.
  struct SentReports: Sendable {
    /// The latest reports, oldest first.
    private var sent: [(ntp: UInt32, time: ContinuousClock.Instant)] = []
    /// How many are kept: 8 s of reports, four a second, beyond which a receiver report that
    /// echoes one comes too late to be worth a round-trip time.
    static let kept = 32

    /// Notes a sender report with NTP time `ntpTime` that left at `time`.
    mutating func note(ntpTime: UInt64, at time: ContinuousClock.Instant) {
      sent.append((UInt32(truncatingIfNeeded: ntpTime >> 16), time))
      if sent.count > Self.kept { sent.removeFirst(sent.count - Self.kept) }
    }

    /// The round-trip time `block` gives when it arrives at `arrival`: since the sender report it
    /// echoes left, less the time the receiver held it (DLSR); nil when it echoes none of the
    /// reports kept, or the receiver says it held it longer than it could have.
    func roundTrip(of block: RTCPReportBlock, arrival: ContinuousClock.Instant) -> Duration? {
      guard block.lastSenderReport != 0, let report = sent.last(where: { $0.ntp == block.lastSenderReport }) else {
        return nil
      }
      let held = Duration.nanoseconds(Int64(block.delaySinceLastSenderReport) * 1_000_000_000 / 65_536)
      let roundTrip = arrival - report.time - held
      // DLSR counts in 1/65536 s: on loopback it can exceed the time measured here by a few µs.
      guard roundTrip > .milliseconds(-1) else { return nil }
      return max(roundTrip, .zero)
    }
  }

  /// A `udpsink` that sends to `host:port` as fast as packets come.
  private static func udpSink(name: String, host: String, port: Int) throws -> Element {
    let sink = try Element.make("udpsink", name: name)
    try sink.set("host", host)
    try sink.set("port", Int32(port))
    try sink.set("sync", false)
    try sink.set("async", false)
    return sink
  }

  /// Sends a buffer of media (its memory shared, not copied) captured at `captured` on the
  /// system clock (now when nil); drops it, logged, when it was captured before the last one sent
  /// or the pipeline refuses it (``SourceFeed``).
  func send(_ buffer: Buffer, caps: Caps, capturedAt captured: ClockTime?) {
    if let sent, let address = buffer.dataAddress.map({ Int(bitPattern: $0) }) {
      sent.value.withLock { recent in
        recent.append(address)
        if recent.count > 8 { recent.removeFirst() }
      }
    }
    feed.send(buffer, caps: caps, capturedAt: captured)
  }

  /// The counters of stream `index` now.
  func statistics(_ index: Int) -> Counters {
    var counters = streams[index].statistics
    if recovery.contains(.nack) {
      counters.packetsRetransmitted =
        (try? pipeline.pipeline.element(named: "rtx\(index)")?.get("num-rtx-packets", as: UInt.self)).map { Int($0) }
    }
    return counters
  }

  /// Stops sending; a plain RTP sender says goodbye first (an RTCP BYE per stream, RFC 3550
  /// §6.6), so that its receivers end its tracks at once rather than after their silence
  /// timeout. An SRTP sender's receivers see the silence (GStreamer ends a session's BYE only on
  /// end of stream, which would wait for the encoders to drain).
  func stop() {
    if srtp == nil {
      for (index, stream) in streams.enumerated() {
        _ = pipeline.pipeline.element(named: "rtcpin\(index)")?.sendDatagram(
          Self.goodbye(ssrcs: [stream.ssrc, stream.rtxSSRC]), to: host, port: stream.port + 1)
      }
    }
    pipeline.stop()
  }

  /// A compound RTCP packet of an empty receiver report from the first of `ssrcs` and a BYE
  /// of them all (at most 31).
  static func goodbye(ssrcs: [UInt32]) -> [UInt8] {
    let sources = ssrcs.prefix(31).map { ssrc in withUnsafeBytes(of: ssrc.bigEndian) { Array($0) } }
    // Version 2, no reports, RR (201), one word after the header; version 2, the sources, BYE (203).
    return [0x80, 201, 0, 1] + sources[0] + [0x80 | UInt8(sources.count), 203, 0, UInt8(sources.count)]
      + sources.flatMap { $0 }
  }

  /// The SDES NOTE of a muted track (RFC 3550 §6.5.7: "the current state of the source"), sent
  /// in every regular RTCP report while the track is muted or its camera off; ``unmutedNote``
  /// otherwise. Receivers that do not know it ignore it.
  static let mutedNote = "muted"
  /// The SDES NOTE of a track that is not muted.
  static let unmutedNote = "unmuted"

  /// What every stream's RTCP says of its source: the CNAME, and whether the track is muted.
  private static func sourceDescription(muted: Bool) throws -> Structure {
    try Structure(
      name: "application/x-rtp-source-sdes",
      ["cname": LocalTrackPublication.cname, "note": muted ? mutedNote : unmutedNote])
  }

  /// The raw formats its encoders take as they come (its feed's).
  var rawFormats: Set<PixelFormat>? { feed.rawFormats }

  /// Says from the next regular report on (within about a second: reports go four times a
  /// second at most) whether the track is muted or its camera off.
  func signal(muted: Bool) {
    // Under the lock, so that the last call's value is the one set.
    signalledMuted.withLock { signalled in
      guard signalled != muted else { return }
      signalled = muted
      do {
        try pipeline.pipeline.element(named: "rtpbin", as: Element.self)
          .set("sdes", try Self.sourceDescription(muted: muted))
      } catch {
        RevueLog.log(
          .warning, "Publication", "the \(name) sender cannot say it is \(muted ? "muted" : "unmuted"): \(error)")
      }
    }
  }
}

/// A value behind a lock, shareable by reference (for closures that outlive the owner's borrow).
final class Locked<Value: Sendable>: Sendable {
  let value: Mutex<Value>
  init(_ value: Value) { self.value = Mutex(value) }
}

/// Which sender a receiver follows when packets for its port come from more than one (RTP
/// source latching, as Asterisk's `strictrtp` and most SIP media servers do it, with the
/// probation of RFC 3550's appendix A.1).
///
/// The first media packet latches its sender: its SSRC and the address it came from. A sender
/// is *proven* once two of its packets came in sequence. While the latched sender is live
/// (heard within ``hold``), media packets of another SSRC or from another address are dropped:
/// a second sender on the port, a stranger colliding with the sender's SSRC, or a flood of
/// made-up packets would otherwise reach the jitter buffer, which follows any sequence number
/// jump, and the decoder, which would show every other sender's frames. Another stream takes
/// over when its packets come in sequence and it is from the sender's own address (the sender
/// restarted its stream), or when the latched sender is not proven yet (a stray packet got
/// there first) — but not within ``hold`` of the latest takeover. A sender silent for ``hold``
/// gives the port up, so that a restarted sender on a new socket is followed a quarter second
/// after the old one stopped.
///
/// So a new SSRC reaches the RTP session at most once per ``hold``, whatever comes: made-up
/// packets with an SSRC each, in sequence or not, would otherwise add a source to the session
/// per packet, and grow it without bound.
///
/// RTCP is taken when it starts with a report of the latched SSRC (as every compound of a
/// sender does: a sender report, or a receiver report once it has stopped sending), from the
/// sender's address or from one other port of its host (plain RTP tools send RTCP from a socket
/// of its own), which is learned while the sender is live: reports of other SSRCs would add
/// sources to the session as made-up media would. The latched sender's reports are taken when
/// it is silent too (its camera off, its track muted): they say so (``RTPSender/signal(muted:)``).
///
/// This holds off strangers and mistakes, not an attacker who reads the stream and forges its
/// sender's address: that takes SRTP (``SRTPKey``) and a source filter (`from:`).
struct SenderLatch: Sendable {
  /// A source address.
  typealias Address = (host: String, port: Int)

  /// How long a sender stays latched after its latest media packet.
  static let hold = Duration.milliseconds(250)

  /// What to do with a media-socket packet.
  enum Verdict: Sendable, Equatable {
    /// Drop it: another sender's, while the latched one is live.
    case drop
    /// Pass it on: the latched sender's.
    case pass
    /// Pass it on: the first packet of a sender now latched (the first one, or one that took
    /// over from a silent, unproven or restarted sender).
    case newSender
  }

  /// The latched sender's media SSRC.
  private(set) var ssrc: UInt32?
  private var address: Address?
  private var proven = false
  private var rtcpAddress: Address?
  private var heard: ContinuousClock.Instant?
  /// When the latched sender was latched.
  private var latched: ContinuousClock.Instant?
  /// Which recent streams' packets come in sequence.
  private var recent = SequenceMemory()

  /// Judges an RTP packet of `ssrc`, `sequence` and `payloadType` (media when it is
  /// `mediaType`; RTX and FEC otherwise) that came from `source` at `now`.
  mutating func media(
    ssrc: UInt32, sequence: UInt16, payloadType: Int, of mediaType: Int, from source: Address?,
    at now: ContinuousClock.Instant
  ) -> Verdict {
    let live = isLive(at: now)
    // Retransmissions and FEC: their own elements drop what they cannot place.
    guard payloadType == mediaType else { return live && !Self.same(address, source) ? .drop : .pass }
    let inSequence = recent.follows(ssrc: ssrc, sequence: sequence, from: source)
    if ssrc == self.ssrc && Self.same(address, source) {
      heard = now
      proven = proven || inSequence
      return .pass
    }
    if live {
      guard inSequence, Self.same(address, source) || !proven, latched.map({ now - $0 >= Self.hold }) ?? true
      else { return .drop }
    }
    (self.ssrc, address, heard, proven, rtcpAddress, latched) = (ssrc, source, now, inSequence, nil, now)
    return .newSender
  }

  /// What to do with an RTCP packet.
  enum ControlVerdict: Sendable, Equatable {
    /// Take it: the live sender's report.
    case take
    /// Drop it quietly: the sender's report of another of its SSRCs (its retransmission
    /// stream's), which the receiver has no use for.
    case ignore
    /// Drop it: another sender's, or no sender is live.
    case drop
  }

  /// Judges an RTCP packet from `source` at `now` whose first report (sender or receiver
  /// report) is of `reporterSSRC` (nil when it starts with neither).
  mutating func control(reporterSSRC: UInt32?, from source: Address?, at now: ContinuousClock.Instant)
    -> ControlVerdict
  {
    guard ssrc != nil else { return .drop }
    guard let address, let source else { return isLive(at: now) && reporterSSRC == ssrc ? .take : .drop }
    let fromSender = Self.same(address, source) || rtcpAddress.map { Self.same($0, source) } == true
    if fromSender { return reporterSSRC == ssrc ? .take : .ignore }
    guard isLive(at: now), rtcpAddress == nil, source.host == address.host, reporterSSRC == ssrc else { return .drop }
    rtcpAddress = source
    return .take
  }

  private func isLive(at now: ContinuousClock.Instant) -> Bool {
    heard.map { now - $0 < Self.hold } ?? false
  }

  /// Whether two addresses are the same; an unknown one matches any.
  static func same(_ one: Address?, _ other: Address?) -> Bool {
    guard let one, let other else { return true }
    return one.host == other.host && one.port == other.port
  }
}

/// The latest sequence number of recent RTP streams, by a hash of their SSRC, to tell a stream
/// whose packets come in sequence (RFC 3550's probation) from made-up packets: a fixed table,
/// so that a flood of SSRCs costs no memory; a flood overwrites a slot now and then, which only
/// delays the judgement.
struct SequenceMemory: Sendable {
  private var slots = [(ssrc: UInt32, sequence: UInt16, address: SenderLatch.Address?)](
    repeating: (0, 0, nil), count: 256)
  /// Spreads SSRCs over the slots in a way a stranger cannot aim at.
  private let spread = UInt32.random(in: 0...UInt32.max) | 1

  /// Records a packet of `ssrc` and `sequence` from `source`; returns whether it follows the
  /// latest one of its SSRC, from the same address (an unknown one matches any).
  mutating func follows(ssrc: UInt32, sequence: UInt16, from source: SenderLatch.Address?) -> Bool {
    let slot = Int((ssrc &* spread) >> 24)
    let latest = slots[slot]
    slots[slot] = (ssrc, sequence, source)
    return latest.ssrc == ssrc && latest.sequence &+ 1 == sequence && SenderLatch.same(latest.address, source)
  }
}

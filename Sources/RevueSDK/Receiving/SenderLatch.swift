/// Which sender a receiver follows when packets for its port come from more than one (RTP
/// source latching, as Asterisk's `strictrtp` and most SIP media servers do it).
///
/// The first media packet latches its sender: its SSRC and the address it came from. While
/// that sender is live (heard within ``hold``), media packets of another SSRC or from another
/// address are dropped: a second sender on the port, a stranger colliding with the sender's
/// SSRC, or a flood of made-up packets would otherwise reach the jitter buffer, which follows
/// any sequence number jump, and the decoder, which would show every other sender's frames. A
/// new SSRC from the sender's own address is followed at once (the sender restarted its
/// stream); a sender silent for ``hold`` gives the port up, so that a restarted sender on a new
/// socket is followed a quarter second after the old one stopped.
///
/// RTCP is taken from the sender's address, or from one other port of its host once a sender
/// report of its SSRC came from there (plain RTP tools send RTCP from a socket of its own).
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
    /// over from a silent or restarted sender).
    case newSender
  }

  /// The latched sender's media SSRC.
  private(set) var ssrc: UInt32?
  private var address: Address?
  private var rtcpAddress: Address?
  private var heard: ContinuousClock.Instant?

  /// Judges an RTP packet of `ssrc` and `payloadType` (media when it is `mediaType`; RTX and
  /// FEC otherwise) that came from `source` at `now`.
  mutating func media(
    ssrc: UInt32, payloadType: Int, of mediaType: Int, from source: Address?, at now: ContinuousClock.Instant
  ) -> Verdict {
    if isLive(at: now) {
      guard Self.same(address, source) else { return .drop }
      guard payloadType == mediaType else { return .pass }
      heard = now
      guard ssrc != self.ssrc else { return .pass }
      self.ssrc = ssrc
      return .newSender
    }
    // Retransmissions and FEC of no live sender: their own elements drop what they cannot place.
    guard payloadType == mediaType else { return .pass }
    let new = ssrc != self.ssrc || !Self.same(address, source)
    if new { rtcpAddress = nil }
    (self.ssrc, address, heard) = (ssrc, source, now)
    return new ? .newSender : .pass
  }

  /// Whether to take an RTCP packet from `source` at `now` whose first report is a sender
  /// report of `senderSSRC` (nil when it has none).
  mutating func control(senderSSRC: UInt32?, from source: Address?, at now: ContinuousClock.Instant) -> Bool {
    guard isLive(at: now), let address, let source else { return true }
    if Self.same(address, source) || rtcpAddress.map({ Self.same($0, source) }) == true { return true }
    guard rtcpAddress == nil, source.host == address.host, senderSSRC == ssrc else { return false }
    rtcpAddress = source
    return true
  }

  private func isLive(at now: ContinuousClock.Instant) -> Bool {
    heard.map { now - $0 < Self.hold } ?? false
  }

  /// Whether two addresses are the same; an unknown one matches any.
  private static func same(_ one: Address?, _ other: Address?) -> Bool {
    guard let one, let other else { return true }
    return one.host == other.host && one.port == other.port
  }
}

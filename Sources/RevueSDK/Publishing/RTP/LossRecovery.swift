import GStreamer

/// How a video stream recovers the packets a link loses, besides asking for a keyframe (RTCP
/// PLI), which senders and receivers always do.
///
/// - ``nack``: the receiver asks for each missing packet (RTCP generic NACK, RFC 4585) and the
///   sender sends it again on a stream of its own (RTX, RFC 4588: its own SSRC and payload type,
///   announced in the SDP with `a=ssrc-group:FID`). Costs bandwidth only for what is lost, and
///   one round trip of delay when a packet is lost. On by default.
/// - ``fec``: the sender adds ULPFEC packets (RFC 5109) from which the receiver rebuilds a lost
///   packet without a round trip. Costs a fixed share of bandwidth (``fecPercentage``) whether
///   or not anything is lost; for links whose round trip is too long to wait for a resend.
public struct LossRecovery: OptionSet, Sendable, Hashable {
  /// The set's bits.
  public let rawValue: Int

  /// Makes a set from its raw bits.
  public init(rawValue: Int) { self.rawValue = rawValue }

  /// Retransmission of what the receiver reports missing (NACK and RTX).
  public static let nack = LossRecovery(rawValue: 1 << 0)
  /// Forward error correction (ULPFEC).
  public static let fec = LossRecovery(rawValue: 1 << 1)

  /// The payload type of the retransmissions of payload type 96.
  static let rtxPayloadType = 97
  /// The payload type of ULPFEC packets.
  static let fecPayloadType = 122
  /// The payload type of the retransmissions of FEC packets: a receiver asks for a lost FEC
  /// packet as for any other (it cannot tell them apart by number), and one never resent held
  /// the picture for the jitter buffer's whole wait.
  static let fecRTXPayloadType = 98
  /// The share of FEC packets added to the media packets, in percent.
  public static let fecPercentage = 20
  /// How long the sender keeps what it sent, to resend it: longer than the jitter buffer waits
  /// for a packet (``Room/defaultLatency``), so every NACK that can still help is answered.
  static let historyMilliseconds = 1_000

  /// What follows the payloader in the chain of stream `index` for this set: an FEC encoder and
  /// an RTX sender (named `rtx<index>`) keeping ``historyMilliseconds`` of packets. Empty when
  /// nothing is on.
  func senderChain(payloadType: Int, ssrc: UInt32, rtxSSRC: UInt32, index: Int) throws(GStreamerError) -> ElementChain {
    var chain: ElementChain = []
    if contains(.fec) {
      chain.elements.append(
        ElementRecipe(
          "rtpulpfecenc",
          [
            "pt": .int(Self.fecPayloadType), "percentage": .int(Self.fecPercentage),
            "percentage-important": .int(Self.fecPercentage), "multipacket": .bool(true),
          ]))
    }
    if contains(.nack) {
      var types = RTPPayloadTypes.revueVideo
      types.media = payloadType
      let payloadTypeMap = try Structure(types.rtxMap(fec: contains(.fec)) ?? "application/x-rtp-pt-map")
      let ssrcMap = try Structure(name: "application/x-rtp-ssrc-map", ["\(ssrc)": UInt32(rtxSSRC)])
      chain.elements.append(
        ElementRecipe(
          "rtprtxsend", name: "rtx\(index)",
          [
            "max-size-time": .int(Self.historyMilliseconds), "max-size-packets": .int(0),
            "payload-type-map": .structure(payloadTypeMap), "ssrc-map": .structure(ssrcMap),
          ]))
    }
    return chain
  }
}

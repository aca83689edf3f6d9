/// The payload types of a stream a receiver takes: its media's, and those of the loss recovery
/// its sender offers. An SDP says them (`m=`, `a=rtpmap`, and `apt` in `a=fmtp` for RTX); a
/// stream opened without one is taken to be sent as Revue sends.
struct RTPPayloadTypes: Sendable, Hashable {
  /// The media's (VP8, H.264 or Opus).
  var media: Int
  /// The retransmissions (RTX, RFC 4588) of the media packets: the `rtx` payload type whose
  /// `apt` is ``media``.
  var rtx: Int?
  /// The ULPFEC packets (RFC 5109).
  var fec: Int?
  /// The retransmissions of the ULPFEC packets: the `rtx` payload type whose `apt` is ``fec``.
  var fecRTX: Int?

  /// Revue's video senders': the media on 96, its RTX on 97, ULPFEC on 122 and its RTX on 98.
  static let revueVideo = RTPPayloadTypes(
    media: 96, rtx: LossRecovery.rtxPayloadType, fec: LossRecovery.fecPayloadType,
    fecRTX: LossRecovery.fecRTXPayloadType)
  /// Revue's audio senders': Opus on 111.
  static let revueAudio = RTPPayloadTypes(media: 111)

  /// The loss recovery these payload types carry: NACK with an RTX payload type, FEC with an
  /// ULPFEC one.
  var recovery: LossRecovery {
    var recovery: LossRecovery = []
    if rtx != nil { recovery.insert(.nack) }
    if fec != nil { recovery.insert(.fec) }
    return recovery
  }

  /// The payload types retransmitted and the payload types of their retransmissions, as
  /// `rtprtxsend` and `rtprtxreceive` take them: the media's, and with `fec` the ULPFEC
  /// packets' when they have an RTX payload type. Nil without an RTX payload type.
  func rtxMap(fec withFEC: Bool) -> String? {
    guard let rtx else { return nil }
    var map = "application/x-rtp-pt-map,\(media)=(uint)\(rtx)"
    if withFEC, let fec, let fecRTX { map += ",\(fec)=(uint)\(fecRTX)" }
    return map
  }
}

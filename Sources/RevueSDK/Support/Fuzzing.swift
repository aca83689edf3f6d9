/// Entry points for the fuzz targets in `Fuzz/` (docs/fuzzing.md): the SDK's internal parsers,
/// reached without widening the public API. Import with `@_spi(Fuzzing) import RevueSDK`.
@_spi(Fuzzing) public enum FuzzEntry {
  /// The media sections of `sdp` as ``Room/listen(sdp:on:latency:lossRecovery:measuresAVSync:from:)``
  /// reads them, before anything is received: each section's port, whether it is SRTP, and
  /// the payload types it receives (the media's first, then those of its loss recovery).
  /// - Throws: ``RevueError`` for an SDP that `listen(sdp:)` refuses.
  public static func parseSDP(_ sdp: String) throws(RevueError) -> [(port: Int, secure: Bool, payloadTypes: [Int])] {
    try SDPMedia.parse(sdp).map { section in
      let types = section.payloadTypes
      return (section.port, section.key != nil, [types.media] + [types.rtx, types.fec, types.fecRTX].compactMap { $0 })
    }
  }

  /// What a WHIP publication reads from an endpoint's answer `sdp`: the simulcast layers it
  /// takes (``SimulcastSDP``); and the offer of three layers it would make from `sdp`.
  public static func simulcast(_ sdp: String) -> (accepted: [String], offer: String) {
    (
      SimulcastSDP.acceptedRIDs(in: sdp),
      SimulcastSDP.offer(sdp, rids: SimulcastSDP.rids(count: 3), fullSize: (1, 2, "fuzz"))
    )
  }
}

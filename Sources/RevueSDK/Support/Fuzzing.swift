/// Entry points for the fuzz targets in `Fuzz/` (docs/fuzzing.md): the SDK's internal parsers,
/// reached without widening the public API. Import with `@_spi(Fuzzing) import RevueSDK`.
@_spi(Fuzzing) public enum FuzzEntry {
  /// The media sections of `sdp` as ``Room/listen(sdp:on:latency:lossRecovery:measuresAVSync:from:)``
  /// reads them, before anything is received: each section's port, and whether it is SRTP.
  /// - Throws: ``RevueError`` for an SDP that `listen(sdp:)` refuses.
  public static func parseSDP(_ sdp: String) throws(RevueError) -> [(port: Int, secure: Bool)] {
    try SDPMedia.parse(sdp).map { ($0.port, $0.key != nil) }
  }

  /// What a WHIP publication reads from an endpoint's answer `sdp`: the simulcast layers it
  /// takes (``SimulcastSDP``); and the offer of three layers it would make from `sdp`.
  public static func simulcast(_ sdp: String) -> (accepted: [String], offer: String) {
    (SimulcastSDP.acceptedRIDs(in: sdp), SimulcastSDP.offer(sdp, rids: SimulcastSDP.rids(count: 3)))
  }
}

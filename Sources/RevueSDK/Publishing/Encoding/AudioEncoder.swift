/// How an audio track is encoded: Opus (`opusenc`), 20 ms frames, in-band FEC tuned for 10 %
/// loss, DTX when asked; its part of a send pipeline (from raw audio to the payloader) in
/// gst-launch syntax, for every transport that sends Opus (RTP, WHIP).
struct AudioEncoder: Sendable, Hashable {
  /// The bitrate.
  let encoding: AudioEncoding
  /// Whether silence is sent as almost nothing (discontinuous transmission).
  let dtx: Bool

  /// The loss Opus's in-band FEC is tuned for, in percent: libopus adds FEC only when this is
  /// above 0, whatever `inband-fec` says.
  static let expectedLossPercent = 10

  /// From raw audio to the payloader, in gst-launch syntax, the encoder named `encoderName`;
  /// the payloader last, so that the caller can add its own properties after it.
  func description(encoderName: String = "encoder") -> String {
    "audioconvert ! audioresample ! opusenc name=\(encoderName) bitrate=\(encoding.maxBitrate) inband-fec=true"
      + " packet-loss-percentage=\(Self.expectedLossPercent) dtx=\(dtx) frame-size=20 ! rtpopuspay"
  }
}

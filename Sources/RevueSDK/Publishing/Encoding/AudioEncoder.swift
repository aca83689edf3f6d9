/// How an audio track is encoded: Opus (`opusenc`), 20 ms frames, in-band FEC tuned for 10 %
/// loss, DTX when asked; its part of a send pipeline (from raw audio to the payloader), for every
/// transport that sends Opus (RTP, WHIP, RTSP).
struct AudioEncoder: Sendable, Hashable {
  /// The bitrate.
  let encoding: AudioEncoding
  /// Whether silence is sent as almost nothing (discontinuous transmission).
  let dtx: Bool

  /// The loss Opus's in-band FEC is tuned for, in percent: libopus adds FEC only when this is
  /// above 0, whatever `inband-fec` says.
  static let expectedLossPercent = 10

  /// From raw audio to the payloader, the encoder named `encoderName`; the payloader last, so
  /// that the caller sets its own properties on it.
  func chain(encoderName: String = "encoder") -> ElementChain {
    [
      ElementRecipe("audioconvert"), ElementRecipe("audioresample"),
      ElementRecipe(
        "opusenc", name: encoderName,
        [
          "bitrate": .int(encoding.maxBitrate), "inband-fec": .bool(true),
          "packet-loss-percentage": .int(Self.expectedLossPercent), "dtx": .bool(dtx), "frame-size": .enumeration("20"),
        ]),
      ElementRecipe("rtpopuspay"),
    ]
  }
}

/// How an audio track is encoded: Opus (`opusenc`, 20 ms frames, in-band FEC tuned for 10 %
/// loss, DTX when asked) for every transport (RTP, WHIP, RTSP), or AAC-LC (`avenc_aac`) where
/// RTSP clients expect a camera's codec; its part of a send pipeline, from raw audio to the
/// payloader.
struct AudioEncoder: Sendable, Hashable {
  /// The bitrate.
  let encoding: AudioEncoding
  /// Whether silence is sent as almost nothing (discontinuous transmission; Opus only).
  let dtx: Bool
  /// The codec.
  var codec = AudioCodec.opus

  /// The loss Opus's in-band FEC is tuned for, in percent: libopus adds FEC only when this is
  /// above 0, whatever `inband-fec` says.
  static let expectedLossPercent = 10

  /// The RTP payload type an RTSP media gives the codec: Opus's usual 111, 97 for AAC.
  var payloadType: Int { codec == .opus ? 111 : 97 }

  /// From raw audio to the payloader, the encoder named `encoderName`; the payloader last, so
  /// that the caller sets its own properties on it.
  func chain(encoderName: String = "encoder") -> ElementChain {
    let encoder =
      switch codec {
      case .opus:
        ElementRecipe(
          "opusenc", name: encoderName,
          [
            "bitrate": .int(encoding.maxBitrate), "inband-fec": .bool(true),
            "packet-loss-percentage": .int(Self.expectedLossPercent), "dtx": .bool(dtx),
            "frame-size": .enumeration("20"),
          ])
      case .aac: ElementRecipe("avenc_aac", name: encoderName, ["bitrate": .int(encoding.maxBitrate)])
      }
    return [
      ElementRecipe("audioconvert"), ElementRecipe("audioresample"), encoder,
      ElementRecipe(codec == .opus ? "rtpopuspay" : "rtpmp4gpay"),
    ]
  }
}

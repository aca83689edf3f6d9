/// A video codec a publication encodes with.
public enum VideoCodec: String, Sendable, Hashable, CaseIterable {
  /// VP8 (`vp8enc`, `rtpvp8pay`).
  case vp8
  /// H.264, constrained baseline, packetization mode 1 (`x264enc` or `openh264enc`, `rtph264pay`).
  case h264

  /// The encoding name in SDP and RTP caps.
  var encodingName: String {
    switch self {
    case .vp8: "VP8"
    case .h264: "H264"
    }
  }
}

/// An audio codec a broadcast serves its audio in.
public enum AudioCodec: String, Sendable, Hashable, CaseIterable {
  /// Opus at 48 kHz (`opusenc`, `rtpopuspay`): what WebRTC and Revue's publications send, and
  /// what ffmpeg, VLC and GStreamer play.
  case opus
  /// AAC-LC (`avenc_aac`, `rtpmp4gpay`: RFC 3640's `mpeg4-generic`): what IP cameras send, and
  /// what NVRs and players that take only a camera's codecs expect.
  case aac
}

/// The most a video layer may send.
public struct VideoEncoding: Sendable, Hashable {
  /// Bits per second.
  public var maxBitrate: Int
  /// Frames per second.
  public var maxFps: Int

  /// An encoding of at most `maxBitrate` bits per second at `maxFps` frames per second.
  public init(maxBitrate: Int, maxFps: Int) {
    self.maxBitrate = maxBitrate
    self.maxFps = maxFps
  }

  /// Seed 002's bitrate for a size: the table's row for that size (or the next larger one),
  /// in the column of `mode`.
  public static func forDimensions(_ dimensions: Dimensions, mode: BitrateMode = .balanced, fps: Int = 30)
    -> VideoEncoding
  {
    let pixels = dimensions.area
    let row = BitrateMode.table.first { $0.pixels >= pixels } ?? BitrateMode.table.last!
    let kbps =
      switch mode {
      case .bandwidthOptimized: row.kbps.0
      case .balanced: row.kbps.1
      case .highQuality: row.kbps.2
      }
    return VideoEncoding(maxBitrate: kbps * 1000, maxFps: fps)
  }
}

/// VideoSDK's trade-off between picture and bandwidth (seed 002).
public enum BitrateMode: Sendable, Hashable {
  /// The lowest bitrates of the table.
  case bandwidthOptimized
  /// The middle column (the default).
  case balanced
  /// The highest bitrates.
  case highQuality

  /// Seed 002's table: pixels of the size, and kbps for the three modes.
  static let table: [(pixels: Int, kbps: (Int, Int, Int))] = [
    (160 * 90, (40, 90, 120)), (160 * 120, (40, 90, 120)), (320 * 180, (60, 120, 180)),
    (240 * 180, (90, 120, 180)), (320 * 240, (100, 150, 200)), (480 * 360, (270, 360, 540)),
    (640 * 360, (300, 450, 600)), (640 * 480, (350, 600, 900)), (960 * 540, (600, 900, 1200)),
    (960 * 720, (900, 1200, 1600)), (1280 * 720, (1000, 1500, 2000)), (1440 * 1080, (1500, 2000, 2700)),
    (1920 * 1080, (1500, 2200, 2700)),
  ].sorted { $0.pixels < $1.pixels }
}

/// A video size with the most it may send: one of LiveKit's presets, or a simulcast layer.
public struct VideoParameters: Sendable, Hashable {
  /// The size.
  public var dimensions: Dimensions
  /// The bitrate and frame rate.
  public var encoding: VideoEncoding

  /// Parameters of `dimensions` encoded at most as `encoding` says.
  public init(dimensions: Dimensions, encoding: VideoEncoding) {
    self.dimensions = dimensions
    self.encoding = encoding
  }

  // MARK: - LiveKit's presets

  /// 160×90, 60 kbps, 15 fps.
  public static let presetH90_169 = VideoParameters(.h90_169, 60_000, 15)
  /// 320×180, 120 kbps, 15 fps.
  public static let presetH180_169 = VideoParameters(.h180_169, 120_000, 15)
  /// 384×216, 180 kbps, 15 fps.
  public static let presetH216_169 = VideoParameters(.h216_169, 180_000, 15)
  /// 640×360, 300 kbps, 20 fps.
  public static let presetH360_169 = VideoParameters(.h360_169, 300_000, 20)
  /// 960×540, 600 kbps, 25 fps.
  public static let presetH540_169 = VideoParameters(.h540_169, 600_000, 25)
  /// 1280×720, 2 Mbps, 30 fps.
  public static let presetH720_169 = VideoParameters(.h720_169, 2_000_000, 30)
  /// 1920×1080, 3 Mbps, 30 fps.
  public static let presetH1080_169 = VideoParameters(.h1080_169, 3_000_000, 30)
  /// 2560×1440, 5 Mbps, 30 fps.
  public static let presetH1440_169 = VideoParameters(.h1440_169, 5_000_000, 30)
  /// 3840×2160, 8 Mbps, 30 fps.
  public static let presetH2160_169 = VideoParameters(.h2160_169, 8_000_000, 30)
  /// 160×120, 80 kbps, 15 fps.
  public static let presetH120_43 = VideoParameters(.h120_43, 80_000, 15)
  /// 240×180, 100 kbps, 15 fps.
  public static let presetH180_43 = VideoParameters(.h180_43, 100_000, 15)
  /// 320×240, 150 kbps, 15 fps.
  public static let presetH240_43 = VideoParameters(.h240_43, 150_000, 15)
  /// 480×360, 225 kbps, 20 fps.
  public static let presetH360_43 = VideoParameters(.h360_43, 225_000, 20)
  /// 640×480, 300 kbps, 20 fps.
  public static let presetH480_43 = VideoParameters(.h480_43, 300_000, 20)
  /// 720×540, 450 kbps, 25 fps.
  public static let presetH540_43 = VideoParameters(.h540_43, 450_000, 25)
  /// 960×720, 1.5 Mbps, 30 fps.
  public static let presetH720_43 = VideoParameters(.h720_43, 1_500_000, 30)
  /// 1440×1080, 2.5 Mbps, 30 fps.
  public static let presetH1080_43 = VideoParameters(.h1080_43, 2_500_000, 30)
  /// 1920×1440, 3.5 Mbps, 30 fps.
  public static let presetH1440_43 = VideoParameters(.h1440_43, 3_500_000, 30)

  /// The 16:9 presets, smallest first.
  public static let presets169 = [
    presetH90_169, presetH180_169, presetH216_169, presetH360_169, presetH540_169, presetH720_169, presetH1080_169,
    presetH1440_169, presetH2160_169,
  ]
  /// The 4:3 presets, smallest first.
  public static let presets43 = [
    presetH120_43, presetH180_43, presetH240_43, presetH360_43, presetH480_43, presetH540_43, presetH720_43,
    presetH1080_43, presetH1440_43,
  ]
  /// The lower simulcast layers LiveKit sends by default under a 16:9 track.
  public static let defaultSimulcastPresets169 = [presetH180_169, presetH360_169]
  /// The lower simulcast layers LiveKit sends by default under a 4:3 track.
  public static let defaultSimulcastPresets43 = [presetH180_43, presetH360_43]

  /// LiveKit's encoding for a size: the first preset of its aspect ratio at least as wide as
  /// the size's longer side (the largest preset when none is).
  public static func suggestedEncoding(for dimensions: Dimensions) -> VideoEncoding {
    let presets = dimensions.isCloserTo169 ? presets169 : presets43
    let longer = max(dimensions.width, dimensions.height)
    return (presets.first { $0.dimensions.width >= longer } ?? presets.last!).encoding
  }

  private init(_ dimensions: Dimensions, _ maxBitrate: Int, _ maxFps: Int) {
    self.init(dimensions: dimensions, encoding: VideoEncoding(maxBitrate: maxBitrate, maxFps: maxFps))
  }
}

extension Dimensions {
  /// Whether the aspect ratio is nearer 16:9 than 4:3 (turned sizes count the same).
  var isCloserTo169: Bool {
    let ratio = Double(max(width, height)) / Double(max(1, min(width, height)))
    return abs(ratio - 16.0 / 9) < abs(ratio - 4.0 / 3)
  }

  /// This size made smaller so that its shorter side is `shorter` (aspect ratio kept, even sides).
  func scaled(toShorterSide shorter: Int32) -> Dimensions {
    let factor = Double(min(width, height)) / Double(max(1, shorter))
    let even = { (side: Int32) in max(2, Int32((Double(side) / factor / 2).rounded()) * 2) }
    return Dimensions(width: even(width), height: even(height))
  }
}

/// The most simulcast layers a publication sends (seed 002's `maxLayer`).
public enum EncodingLayer: Int, Sendable, Hashable {
  /// The full size and one smaller layer.
  case maxLayer2 = 2
  /// The full size and two smaller layers.
  case maxLayer3 = 3
}

/// How a video track is published.
public struct VideoPublishOptions: Sendable, Hashable {
  /// The bitrate and frame rate of the full-size stream; nil picks them from the track's size
  /// (seed 002's table, in the column of ``bitrateMode``).
  public var encoding: VideoEncoding?
  /// Whether smaller layers are sent beside the full size, each from its own encoder at its own
  /// size, SSRC and port pair (seed 002's `multiStream`, LiveKit's simulcast).
  ///
  /// nil (the default) decides by destination, as API.md says: off for the `rtp://` and
  /// `srtp://` rooms, which are point-to-point (no forwarder chooses between layers, and each
  /// layer costs an encoder); on for a room that publishes to an SFU (`whip+https://`), where
  /// the layers are offered by RID as browsers offer them and sent if the endpoint's answer
  /// takes them (else the full size goes alone). The VideoSDK face passes seed 002's
  /// `multiStream` (true by default). Layers follow LiveKit's rule: three when the longer side is
  /// at least 960, two from 480, none below.
  public var simulcast: Bool?
  /// The smaller layers' sizes and encodings; empty for LiveKit's defaults
  /// (``VideoParameters/defaultSimulcastPresets169`` or `43`). A layer keeps the track's aspect
  /// ratio: its shorter side is the preset's.
  public var simulcastLayers: [VideoParameters]
  /// The most layers sent, the full size included (seed 002's `maxLayer`).
  public var maxLayer: EncodingLayer
  /// The codec.
  public var preferredCodec: VideoCodec
  /// The column of seed 002's table the default encoding comes from.
  public var bitrateMode: BitrateMode
  /// How lost packets are recovered: retransmission (NACK and RTX) by default; add ``LossRecovery/fec``
  /// for links whose round trip is long, or pass `[]` to send as plain RTP tools do. Not over
  /// WHIP yet, which answers keyframe requests only (a warning says so when this asks for more).
  public var lossRecovery: LossRecovery
  /// Whether each stream's bitrate follows the path (congestion control): on by default. The
  /// sender reads the receiver's RTCP reports (loss, round-trip time) and lowers the encoder's
  /// bitrate when the path is congested, halving the frame rate when the bitrate falls very low
  /// for the size, then climbs back up to the encoding's ``VideoEncoding/maxBitrate`` as the
  /// path allows (docs/congestion-control.md). Off, the encoder keeps its bitrate whatever
  /// the path does, and ``LocalTrackPublication/Statistics/targetBitrate`` is nil. Not over WHIP
  /// yet, whose bitrate is fixed (a warning says so when this is on).
  public var adaptiveBitrate: Bool

  /// Options with the defaults: VP8, one layer, the balanced bitrate for the track's size,
  /// retransmission of lost packets, adaptive bitrate on.
  public init(
    encoding: VideoEncoding? = nil, simulcast: Bool? = nil, simulcastLayers: [VideoParameters] = [],
    maxLayer: EncodingLayer = .maxLayer3, preferredCodec: VideoCodec = .vp8, bitrateMode: BitrateMode = .balanced,
    lossRecovery: LossRecovery = .nack, adaptiveBitrate: Bool = true
  ) {
    self.lossRecovery = lossRecovery
    self.encoding = encoding
    self.simulcast = simulcast
    self.simulcastLayers = simulcastLayers
    self.maxLayer = maxLayer
    self.preferredCodec = preferredCodec
    self.bitrateMode = bitrateMode
    self.adaptiveBitrate = adaptiveBitrate
  }

  /// The layers sent for a track of `dimensions`, the full size first; `toSFU` is the
  /// destination's part in the default (``simulcast`` nil): whether it is an SFU (WHIP).
  public func layers(for dimensions: Dimensions, toSFU: Bool = false) -> [VideoParameters] {
    let full = VideoParameters(
      dimensions: dimensions, encoding: encoding ?? .forDimensions(dimensions, mode: bitrateMode))
    guard simulcast ?? toSFU else { return [full] }
    let presets =
      (simulcastLayers.isEmpty
      ? (dimensions.isCloserTo169
        ? VideoParameters.defaultSimulcastPresets169 : VideoParameters.defaultSimulcastPresets43)
      : simulcastLayers).sorted { $0.dimensions.area < $1.dimensions.area }
    let longer = max(dimensions.width, dimensions.height)
    let wanted = longer >= 960 ? 2 : longer >= 480 ? 1 : 0
    let lower = presets.prefix(min(wanted, maxLayer.rawValue - 1))
      .filter { min($0.dimensions.width, $0.dimensions.height) < min(dimensions.width, dimensions.height) }
      .map { preset in
        VideoParameters(
          dimensions: dimensions.scaled(toShorterSide: min(preset.dimensions.width, preset.dimensions.height)),
          encoding: preset.encoding)
      }
    return [full] + lower.reversed()
  }
}

/// The most an audio track may send (Opus).
public struct AudioEncoding: Sendable, Hashable {
  /// Bits per second.
  public var maxBitrate: Int

  /// An encoding of at most `maxBitrate` bits per second.
  public init(maxBitrate: Int) { self.maxBitrate = maxBitrate }

  /// 12 kbps.
  public static let presetTelephone = AudioEncoding(maxBitrate: 12_000)
  /// 24 kbps.
  public static let presetSpeech = AudioEncoding(maxBitrate: 24_000)
  /// 48 kbps.
  public static let presetMusic = AudioEncoding(maxBitrate: 48_000)
  /// 64 kbps.
  public static let presetMusicStereo = AudioEncoding(maxBitrate: 64_000)
  /// 96 kbps.
  public static let presetMusicHighQuality = AudioEncoding(maxBitrate: 96_000)
  /// 128 kbps.
  public static let presetMusicHighQualityStereo = AudioEncoding(maxBitrate: 128_000)
}

/// How an audio track is published.
public struct AudioPublishOptions: Sendable, Hashable {
  /// The bitrate; nil for ``AudioEncoding/presetMusic``, or the microphone preset's bitrate.
  public var encoding: AudioEncoding?
  /// Discontinuous transmission: almost nothing is sent during silence.
  public var dtx: Bool

  /// Options with the defaults: the preset's bitrate, DTX on.
  public init(encoding: AudioEncoding? = nil, dtx: Bool = true) {
    self.encoding = encoding
    self.dtx = dtx
  }
}

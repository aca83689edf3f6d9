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

/// How a video track is published.
public struct VideoPublishOptions: Sendable, Hashable {
  /// The bitrate and frame rate; nil picks them from the track's size (seed 002's balanced column).
  public var encoding: VideoEncoding?
  /// The codec.
  public var preferredCodec: VideoCodec

  /// Options with the defaults: VP8, the bitrate for the track's size.
  public init(encoding: VideoEncoding? = nil, preferredCodec: VideoCodec = .vp8) {
    self.encoding = encoding
    self.preferredCodec = preferredCodec
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

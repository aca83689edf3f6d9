import RevueSDK

/// The resolution of a custom camera track, with its three bitrates (seed 002's table; every
/// configuration is sent at 30 fps). A portrait camera sends the same size turned.
public enum CustomCameraTrackConfig: String, Sendable, Hashable, CaseIterable {
  /// 160×90; 40, 90 or 120 kbps.
  case h90p_w160p
  /// 320×180; 60, 120 or 180 kbps.
  case h180p_w320p
  /// 640×360; 300, 450 or 600 kbps.
  case h360p_w640p
  /// 960×540; 600, 900 or 1200 kbps.
  case h540p_w960p
  /// 1280×720; 1000, 1500 or 2000 kbps (the default).
  case h720p_w1280p
  /// 1920×1080; 1500, 2200 or 2700 kbps.
  case h1080p_w1920p
  /// 160×120; 40, 90 or 120 kbps.
  case h120p_w160p
  /// 240×180; 90, 120 or 180 kbps.
  case h180p_w240p
  /// 320×240; 100, 150 or 200 kbps.
  case h240p_w320p
  /// 480×360; 270, 360 or 540 kbps.
  case h360p_w480p
  /// 640×480; 350, 600 or 900 kbps.
  case h480p_w640p
  /// 960×720; 900, 1200 or 1600 kbps.
  case h720p_w960p
  /// 1440×1080; 1500, 2000 or 2700 kbps.
  case h1080p_w1440p

  /// The size the camera is asked for (the nearest size it offers is used: see `CameraCapturer`).
  public var dimensions: Dimensions {
    switch self {
    case .h90p_w160p: .h90_169
    case .h180p_w320p: .h180_169
    case .h360p_w640p: .h360_169
    case .h540p_w960p: .h540_169
    case .h720p_w1280p: .h720_169
    case .h1080p_w1920p: .h1080_169
    case .h120p_w160p: .h120_43
    case .h180p_w240p: .h180_43
    case .h240p_w320p: .h240_43
    case .h360p_w480p: .h360_43
    case .h480p_w640p: .h480_43
    case .h720p_w960p: .h720_43
    case .h1080p_w1440p: .h1080_43
    }
  }

  /// Frames per second: 30 for every configuration.
  public var frameRate: Int { 30 }

  /// The most the full-size layer sends in `mode`: the table's bitrate, at ``frameRate``.
  /// RevueSDK holds the table (`VideoEncoding.forDimensions(_:mode:fps:)`); this picks its row.
  public func encoding(for mode: BitrateMode) -> VideoEncoding {
    .forDimensions(dimensions, mode: mode.revue, fps: frameRate)
  }

  /// The table's bitrate in `mode`, in kilobits per second.
  public func kbps(for mode: BitrateMode) -> Int { encoding(for: mode).maxBitrate / 1000 }
}

/// Which way the camera of a custom track faces.
///
/// On Linux the side comes from the camera's profile (a laptop's built-in camera is `.front`, a
/// board's camera module `.back`); USB webcams face neither way and are used when no camera faces
/// either side.
public enum FacingMode: String, Sendable, Hashable, CaseIterable {
  /// The camera facing the user.
  case front
  /// The camera facing away from the user.
  case back

  /// RevueSDK's position of this side.
  public var position: CameraPosition {
    switch self {
    case .front: .front
    case .back: .back
    }
  }

  /// The other side, used when no camera faces this one.
  public var opposite: FacingMode { self == .front ? .back : .front }
}

/// The most simulcast layers a camera track is sent in, when `multiStream` is true: seed 002's
/// `EncodingLayer`, the type of `createCameraVideoTrack`'s `maxLayer`.
///
/// It shadows RevueSDK's `EncodingLayer` (cases `.maxLayer2`, `.maxLayer3`) for code that
/// imports only `RevueVideoSDK`, so a ported `let layer: EncodingLayer = .MAX_LAYER_2`
/// compiles; code that imports both writes `RevueVideoSDK.EncodingLayer`.
public enum EncodingLayer: Int, Sendable, Hashable, CaseIterable {
  /// The full size and one smaller layer.
  case MAX_LAYER_2 = 2
  /// The full size and two smaller layers (the default).
  case MAX_LAYER_3 = 3

  /// RevueSDK's value.
  public var encodingLayer: RevueSDK.EncodingLayer {
    switch self {
    case .MAX_LAYER_2: .maxLayer2
    case .MAX_LAYER_3: .maxLayer3
    }
  }
}

/// The face's first name of ``EncodingLayer``, kept for code that uses it.
public typealias MaxLayer = EncodingLayer

/// The column of the bitrate table a camera track is sent at.
///
/// It shadows RevueSDK's `BitrateMode` for code that imports only `RevueVideoSDK`; code that
/// imports both writes `RevueVideoSDK.BitrateMode`.
public enum BitrateMode: String, Sendable, Hashable, CaseIterable {
  /// The lowest bitrates, to save data.
  case BANDWIDTH_OPTIMIZED
  /// The middle column (the default).
  case BALANCED
  /// The highest bitrates, for the best picture.
  case HIGH_QUALITY

  /// RevueSDK's mode.
  public var revue: RevueSDK.BitrateMode {
    switch self {
    case .BANDWIDTH_OPTIMIZED: .bandwidthOptimized
    case .BALANCED: .balanced
    case .HIGH_QUALITY: .highQuality
    }
  }
}

/// The codec a camera track is sent with.
///
/// It shadows RevueSDK's `VideoCodec` for code that imports only `RevueVideoSDK`; code that
/// imports both writes `RevueVideoSDK.VideoCodec`.
public enum VideoCodec: String, Sendable, Hashable, CaseIterable {
  /// VP8 (the default).
  case VP8
  /// H.264, constrained baseline.
  case H264

  /// RevueSDK's codec.
  public var revue: RevueSDK.VideoCodec {
    switch self {
    case .VP8: .vp8
    case .H264: .h264
    }
  }
}

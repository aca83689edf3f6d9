/// A frame size in pixels, as the seeds' `CMVideoDimensions`.
public struct Dimensions: Sendable, Hashable, CustomStringConvertible {
  /// The width in pixels.
  public var width: Int32
  /// The height in pixels.
  public var height: Int32

  /// A size of `width`×`height`.
  public init(width: Int32, height: Int32) {
    self.width = width
    self.height = height
  }

  /// The size turned by 90° (width and height swapped).
  public var swapped: Dimensions { Dimensions(width: height, height: width) }

  /// The number of pixels.
  public var area: Int { Int(width) * Int(height) }

  /// `WIDTHxHEIGHT`.
  public var description: String { "\(width)x\(height)" }

  // MARK: - Presets (LiveKit's table)

  /// 160×90.
  public static let h90_169 = Dimensions(width: 160, height: 90)
  /// 320×180.
  public static let h180_169 = Dimensions(width: 320, height: 180)
  /// 384×216.
  public static let h216_169 = Dimensions(width: 384, height: 216)
  /// 640×360.
  public static let h360_169 = Dimensions(width: 640, height: 360)
  /// 960×540.
  public static let h540_169 = Dimensions(width: 960, height: 540)
  /// 1280×720.
  public static let h720_169 = Dimensions(width: 1280, height: 720)
  /// 1920×1080.
  public static let h1080_169 = Dimensions(width: 1920, height: 1080)
  /// 2560×1440.
  public static let h1440_169 = Dimensions(width: 2560, height: 1440)
  /// 3840×2160.
  public static let h2160_169 = Dimensions(width: 3840, height: 2160)
  /// 160×120.
  public static let h120_43 = Dimensions(width: 160, height: 120)
  /// 240×180.
  public static let h180_43 = Dimensions(width: 240, height: 180)
  /// 320×240.
  public static let h240_43 = Dimensions(width: 320, height: 240)
  /// 480×360.
  public static let h360_43 = Dimensions(width: 480, height: 360)
  /// 640×480.
  public static let h480_43 = Dimensions(width: 640, height: 480)
  /// 720×540.
  public static let h540_43 = Dimensions(width: 720, height: 540)
  /// 960×720.
  public static let h720_43 = Dimensions(width: 960, height: 720)
  /// 1440×1080.
  public static let h1080_43 = Dimensions(width: 1440, height: 1080)
  /// 1920×1440.
  public static let h1440_43 = Dimensions(width: 1920, height: 1440)
}

/// How far to turn a frame clockwise to make it upright.
public enum VideoRotation: Int, Sendable, Hashable, CaseIterable {
  /// Upright already.
  case _0 = 0
  /// A quarter turn clockwise: width and height swap.
  case _90 = 90
  /// A half turn.
  case _180 = 180
  /// Three quarter turns clockwise: width and height swap.
  case _270 = 270

  /// Whether the turn swaps width and height.
  public var swapsDimensions: Bool { self == ._90 || self == ._270 }

  /// `videoflip`'s `video-direction` nick for this turn.
  var videoDirection: String {
    switch self {
    case ._0: "identity"
    case ._90: "90r"
    case ._180: "180"
    case ._270: "90l"
    }
  }
}

/// Seed 000's and seed 001's Apple frame size: a port that keeps it fails to compile with this
/// message instead of declaring a delegate method nothing calls.
@available(*, unavailable, renamed: "Dimensions", message: "RevueSDK's frame size is Dimensions")
public typealias CMVideoDimensions = Dimensions

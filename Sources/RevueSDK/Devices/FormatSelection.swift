/// What the camera captures: a format of the device and the rate asked of it.
struct FormatChoice: Sendable, Hashable {
  /// The device's format.
  var format: CaptureFormat
  /// The rate asked of the camera: the requested one, clamped to the format.
  var cameraFrameRate: Double

  /// The size of the frames.
  var dimensions: Dimensions { format.dimensions }
}

/// Seed 004's format selection, with the Linux rules of issue 4.
enum FormatSelection {
  /// The format closest to `dimensions` at `fps`:
  /// 1. `preferred`, when the device has it;
  /// 2. else, ranked: the aspect ratio matches; the frame rate is reachable; the smallest
  ///    |Δwidth| + |Δheight|; the rate closest to the one asked, when none reaches it; then raw
  ///    before compressed (MJPEG, then H.264), so a compressed format wins only when the raw one
  ///    cannot reach the rate at that size.
  ///
  /// Grey formats are left out unless the device has nothing else (an infrared camera).
  /// The frame rate is clamped to what the format offers. nil when the device has no format.
  static func choose(
    from formats: [CaptureFormat], dimensions: Dimensions, fps: Double?, preferred: CaptureFormat? = nil
  ) -> FormatChoice? {
    if let preferred, let match = formats.first(where: { $0 == preferred }) {
      return FormatChoice(format: match, cameraFrameRate: match.clampedFrameRate(fps ?? match.maxFrameRate))
    }
    let colour = formats.filter { $0.encoding != .raw(.gray8) }
    let candidates = colour.isEmpty ? formats : colour
    let best = candidates.min { rank($0, dimensions, fps) < rank($1, dimensions, fps) }
    return best.map { FormatChoice(format: $0, cameraFrameRate: $0.clampedFrameRate(fps ?? $0.maxFrameRate)) }
  }

  private struct Rank: Comparable {
    var aspectMismatch: Int
    var rateUnreachable: Int
    var distance: Int32
    var rateShortfall: Double
    var encodingCost: Int

    static func < (lhs: Rank, rhs: Rank) -> Bool {
      (lhs.aspectMismatch, lhs.rateUnreachable, lhs.distance, lhs.rateShortfall, lhs.encodingCost)
        < (rhs.aspectMismatch, rhs.rateUnreachable, rhs.distance, rhs.rateShortfall, rhs.encodingCost)
    }
  }

  private static func rank(_ format: CaptureFormat, _ target: Dimensions, _ fps: Double?) -> Rank {
    let size = format.dimensions
    let aspect = Double(size.width) / Double(max(size.height, 1))
    let wanted = Double(target.width) / Double(max(target.height, 1))
    let reachable = fps.map { format.maxFrameRate >= $0 - 0.001 } ?? true
    return Rank(
      aspectMismatch: abs(aspect - wanted) < 0.02 ? 0 : 1,
      rateUnreachable: reachable ? 0 : 1,
      distance: abs(size.width - target.width) + abs(size.height - target.height),
      rateShortfall: fps.map { max(0, $0 - format.maxFrameRate) } ?? 0,
      encodingCost: cost(format.encoding))
  }

  /// Cheaper encodings first: raw 4:2:0 passes through, YUY2 is converted, JPEG and H.264 are decoded.
  private static func cost(_ encoding: CaptureFormat.Encoding) -> Int {
    switch encoding {
    case .raw(.nv12): 0
    case .raw(.i420): 1
    case .raw: 2
    case .jpeg: 3
    case .h264: 4
    }
  }

  /// Whether the choice settles for less than `requested` (a smaller width or height).
  static func isDowngrade(_ choice: FormatChoice, requested: Dimensions) -> Bool {
    choice.dimensions.width < requested.width || choice.dimensions.height < requested.height
  }
}

/// A rational number, as GStreamer uses for frame rates and pixel aspect ratios.
///
/// The corresponding C type is `GST_TYPE_FRACTION`.
public struct Fraction: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The numerator.
  public var numerator: Int32
  /// The denominator (never 0 in a valid fraction).
  public var denominator: Int32

  /// Creates `numerator/denominator`.
  public init(_ numerator: Int32, _ denominator: Int32 = 1) {
    self.numerator = numerator
    self.denominator = denominator
  }

  /// The value as a double (0 when the denominator is 0).
  public var doubleValue: Double {
    denominator == 0 ? 0 : Double(numerator) / Double(denominator)
  }

  /// Orders by value; compares cross-multiplied in 64 bits, so no precision is lost.
  public static func < (lhs: Fraction, rhs: Fraction) -> Bool {
    let (l, r) = (Int64(lhs.numerator) * Int64(rhs.denominator), Int64(rhs.numerator) * Int64(lhs.denominator))
    return (Int64(lhs.denominator) * Int64(rhs.denominator)) > 0 ? l < r : l > r
  }

  /// `numerator/denominator`, as in caps strings.
  public var description: String { "\(numerator)/\(denominator)" }
}

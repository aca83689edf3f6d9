/// Percentiles of a list of values.
extension Array where Element == Double {
  /// The value below which `fraction` of the values lie (nearest rank); nil when empty.
  func percentile(_ fraction: Double) -> Double? {
    guard !isEmpty else { return nil }
    let sorted = self.sorted()
    return sorted[Swift.min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
  }

  /// The median; nil when empty.
  var median: Double? { percentile(0.5) }
}

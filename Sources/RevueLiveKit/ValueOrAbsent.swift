/// A value given, or none: LiveKit's argument type for `copyWith`, where `.absent` keeps the
/// current value and `.value(nil)` clears an optional one.
public enum ValueOrAbsent<T> {
  /// This value.
  case value(T)
  /// No value: keep the current one.
  case absent

  /// The value given, else `other`.
  public func value(ifAbsent other: T) -> T {
    switch self {
    case .value(let value): value
    case .absent: other
    }
  }
}

extension ValueOrAbsent: Sendable where T: Sendable {}
extension ValueOrAbsent: Equatable where T: Equatable {}
extension ValueOrAbsent: Hashable where T: Hashable {}

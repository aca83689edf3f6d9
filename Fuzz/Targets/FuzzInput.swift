/// Reads the values of one fuzz input from its bytes, front to back; once the bytes run out,
/// every read gives zero, so any input is a valid one.
public struct FuzzInput {
  private let bytes: [UInt8]
  private var position = 0

  /// Values read from `bytes`.
  public init(_ bytes: [UInt8]) { self.bytes = bytes }

  /// The bytes not read yet.
  public var remaining: ArraySlice<UInt8> { bytes[min(position, bytes.count)...] }

  /// The next byte, or 0 when there is none.
  public mutating func byte() -> UInt8 {
    guard position < bytes.count else { return 0 }
    defer { position += 1 }
    return bytes[position]
  }

  /// One of `choices`, chosen by the next byte.
  public mutating func choice<T>(_ choices: [T]) -> T { choices[Int(byte()) % choices.count] }

  /// A little-endian integer of `count` bytes (at most 8).
  public mutating func integer(bytes count: Int) -> UInt64 {
    var value: UInt64 = 0
    for shift in 0..<min(count, 8) { value |= UInt64(byte()) << (8 * shift) }
    return value
  }

  /// Values that break arithmetic and bounds: zero, negatives, the limits of the integer types
  /// and the SDK's own limits on either side.
  public static let edges: [Int] = [
    0, 1, 2, 3, -1, -2, Int.min, Int.max, Int.max / 2, Int.max / 4 + 1, Int(Int32.max), Int(Int32.max) + 1,
    Int(UInt32.max), 16_383, 16_384, 16_385, 65_536, 768_000, 768_001, 64, 65, 1 << 40,
  ]

  /// A size: mostly small (0…`limit`), sometimes one of ``edges``, chosen by the first byte.
  public mutating func size(upTo limit: Int) -> Int {
    let tag = byte()
    if tag >= 0xE0 { return Self.edges[Int(tag - 0xE0) % Self.edges.count] }
    return Int(integer(bytes: 2)) % (limit + 1)
  }
}

/// The bytes of `value` in network order (big-endian), as RTP and RTCP write their fields: what
/// the lab's hostile traffic and the tests' hand-made packets are built from.
public func bigEndianBytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
  withUnsafeBytes(of: value.bigEndian) { Array($0) }
}

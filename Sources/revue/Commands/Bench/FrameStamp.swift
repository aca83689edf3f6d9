/// A frame number carried in the pixels: 16 bits as 64×64 blocks of black (0) or white (1) luma
/// along the top of the picture. Blocks this large and this far apart in brightness survive VP8
/// and H.264 at the bitrates the bench uses, and reading them needs no metadata, so the number
/// comes out of any decoder, Revue's or gst-launch's, the same way.
enum FrameStamp {
  /// Bits carried.
  static let bits = 16
  /// Side of a block, in pixels.
  static let block = 64

  /// An I420 picture of `width`×`height`, mid-grey, ready for ``write(_:into:width:)``.
  static func blankI420(width: Int, height: Int) -> [UInt8] {
    [UInt8](repeating: 128, count: width * height * 3 / 2)
  }

  /// Writes `number` (its low 16 bits) into the luma plane at the start of `frame`.
  static func write(_ number: Int, into frame: inout [UInt8], width: Int) {
    for bit in 0..<bits {
      let luma: UInt8 = number >> bit & 1 == 1 ? 235 : 16
      for row in 0..<block {
        let start = row * width + bit * block
        frame.replaceSubrange(start..<start + block, with: repeatElement(luma, count: block))
      }
    }
  }

  /// Reads the number from a luma plane with rows of `stride` bytes: the middle of each block.
  static func read(_ luma: UnsafeRawBufferPointer, stride: Int) -> Int {
    var number = 0
    for bit in 0..<bits {
      var sum = 0
      for row in block / 2 - 2..<block / 2 + 2 {
        for column in bit * block + block / 2 - 2..<bit * block + block / 2 + 2 {
          sum += Int(luma[row * stride + column])
        }
      }
      if sum / 16 > 128 { number |= 1 << bit }
    }
    return number
  }
}

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

import RevueSDK

/// A frame number carried in the pixels: ``bits`` bits as square blocks of ``block`` pixels of
/// black (0) or white (1) luma, side by side along the top of the picture, the lowest bit at
/// the left.
///
/// Blocks this large (a whole number of 16-pixel macroblocks) and this far apart in brightness
/// survive VP8 and H.264 at low bitrates, and reading them needs no metadata, so the number comes
/// out of any decoder, Revue's or gst-launch's, the same way. The numbers wrap at ``modulus``.
/// The bench's latency scenarios use ``bench`` (16 blocks of 64 pixels: 1024 pixels wide); a
/// 640-pixel-wide picture needs smaller blocks (``fitting(width:bits:)``).
public struct FrameStamp: Sendable, Hashable {
  /// Bits carried.
  public let bits: Int
  /// Side of a block, in pixels.
  public let block: Int

  /// Written luma of a 0 bit (video-range black).
  public static let dark: UInt8 = 16
  /// Written luma of a 1 bit (video-range white).
  public static let bright: UInt8 = 235

  /// A stamp of `bits` bits (1 to 32) in blocks of `block` pixels (an even number, at least 8).
  public init(bits: Int = 16, block: Int = 64) {
    precondition((1...32).contains(bits), "a stamp carries 1 to 32 bits, not \(bits)")
    precondition(
      block >= 8 && block % 2 == 0, "a stamp's blocks are an even number of pixels, at least 8, not \(block)")
    self.bits = bits
    self.block = block
  }

  /// The bench's stamp: 16 bits in blocks of 64 pixels.
  public static let bench = FrameStamp(bits: 16, block: 64)

  /// The stamp of `bits` bits with the largest blocks, a multiple of 16 pixels up to 64, that fit
  /// in `width` (32-pixel blocks for a 16-bit stamp at 640, 64 at 1280); 8-pixel blocks if none do.
  public static func fitting(width: Int, bits: Int = 16) -> FrameStamp {
    let block = stride(from: 64, through: 16, by: -16).first { $0 * bits <= width } ?? 8
    return FrameStamp(bits: bits, block: block)
  }

  /// The stamp's width in pixels (its height is ``block``).
  public var width: Int { bits * block }

  /// How many numbers the stamp tells apart: a number is stamped modulo this.
  public var modulus: Int { 1 << bits }

  /// Whether the stamp fits in a picture of `width`×`height`.
  public func fits(width: Int, height: Int) -> Bool { self.width <= width && block <= height }

  /// An I420 picture of `width`×`height`, mid-grey, ready for ``write(_:into:width:)``.
  public static func blankI420(width: Int, height: Int) -> [UInt8] {
    [UInt8](repeating: 128, count: width * height * 3 / 2)
  }

  /// Writes `number` (modulo ``modulus``) into the luma plane at the start of `frame`, whose rows
  /// are `width` bytes (a packed I420 or NV12 picture).
  public func write(_ number: Int, into frame: inout [UInt8], width: Int) {
    precondition(self.width <= width && block * width <= frame.count, "the stamp does not fit in the picture")
    frame.withUnsafeMutableBytes { write(number, luma: $0, stride: width) }
  }

  /// Writes `number` (modulo ``modulus``) into a luma plane whose rows are `stride` bytes apart.
  public func write(_ number: Int, luma: UnsafeMutableRawBufferPointer, stride: Int) {
    precondition(width <= stride && stride * (block - 1) + width <= luma.count, "the stamp does not fit in the plane")
    guard let base = luma.baseAddress else { return }
    for bit in 0..<bits {
      let value = number >> bit & 1 == 1 ? Self.bright : Self.dark
      for row in 0..<block {
        (base + row * stride + bit * block).initializeMemory(as: UInt8.self, repeating: value, count: block)
      }
    }
  }

  /// Reads the number from a luma plane whose rows are `stride` bytes apart: each bit from the
  /// mean of the 4×4 pixels at the middle of its block, against mid-grey, however unclear.
  public func read(_ luma: UnsafeRawBufferPointer, stride: Int) -> Int {
    var number = 0
    for bit in 0..<bits where mean(of: bit, in: luma, stride: stride) > 128 { number |= 1 << bit }
    return number
  }

  /// Reads the number as ``read(_:stride:)`` does, or nil when a block is neither clearly dark
  /// nor clearly bright (its middle within 48 of mid-grey): the picture has no stamp there, or
  /// a broken one.
  public func readIfClear(_ luma: UnsafeRawBufferPointer, stride: Int) -> Int? {
    var number = 0
    for bit in 0..<bits {
      let mean = mean(of: bit, in: luma, stride: stride)
      guard abs(mean - 128) >= 48 else { return nil }
      if mean > 128 { number |= 1 << bit }
    }
    return number
  }

  /// Reads the number of a picture (I420, NV12 or another format whose first plane is luma), or
  /// nil when it is too small for the stamp or a block is unclear (``readIfClear(_:stride:)``).
  public func read(_ frame: PixelBuffer) -> Int? {
    guard fits(width: frame.width, height: frame.height), [.i420, .nv12, .gray8].contains(frame.format) else {
      return nil
    }
    return (try? frame.withPlane(0) { bytes, plane in readIfClear(bytes, stride: plane.stride) }) ?? nil
  }

  /// The mean of the 4×4 pixels at the middle of block `bit`.
  private func mean(of bit: Int, in luma: UnsafeRawBufferPointer, stride: Int) -> Int {
    var sum = 0
    for row in block / 2 - 2..<block / 2 + 2 {
      for column in bit * block + block / 2 - 2..<bit * block + block / 2 + 2 {
        sum += Int(luma[row * stride + column])
      }
    }
    return sum / 16
  }
}

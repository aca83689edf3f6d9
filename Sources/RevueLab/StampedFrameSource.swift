import Foundation
import RevueSDK
import Synchronization

/// Makes I420 pictures of one size whose number is stamped in the pixels (``FrameStamp``), with
/// content an encoder has to spend its bitrate on, as a camera's would.
///
/// The content is a detailed noise texture (value noise at three scales and fine grain, with
/// colour), made once per size and seed and shared by the sources that use them, seen through a
/// window that pans a few pixels each frame and whose rows sway sideways by different amounts,
/// so blocks never move as one and motion search cannot predict them exactly; over it a box of
/// other colours crosses the picture. Every frame differs from the others (its stamp, at least).
///
/// A frame is made by copying rows into new memory (``PixelBuffer/init(width:height:format:colorRange:fill:)``),
/// the format ``BufferCapturer`` and both encoders take without a copy; only the stamp is drawn
/// pixel by pixel, so a debug build makes a 720p frame with 1.6 ms of CPU (5% of a core at
/// 30 fps), once the texture is made (under a second, the first time a size is asked for).
public final class StampedFrameSource: Sendable {
  /// The width of the frames, in pixels.
  public let width: Int
  /// The height of the frames, in pixels.
  public let height: Int
  /// The stamp written at the top of each frame.
  public let stamp: FrameStamp
  private let texture: Texture

  /// How far the window into the texture moves from its middle, in pixels: the texture is this
  /// much larger than the frame on every side.
  static let margin = 32

  /// A source of `width`×`height` frames stamped with `stamp` (by default the largest 16-bit
  /// stamp that fits: ``FrameStamp/fitting(width:bits:)``), its texture drawn from `seed`.
  /// - Throws: ``MediaBufferError`` when the size is odd, zero or absurd, or the stamp does not fit.
  public init(width: Int, height: Int, stamp: FrameStamp? = nil, seed: UInt64 = 1) throws(MediaBufferError) {
    let stamp = stamp ?? FrameStamp.fitting(width: width)
    guard width > 0, height > 0, width % 2 == 0, height % 2 == 0, width <= 8192, height <= 8192 else {
      throw MediaBufferError("stamped frames need an even width and height up to 8192, not \(width)x\(height)")
    }
    guard stamp.fits(width: width, height: height) else {
      throw MediaBufferError(
        "a stamp of \(stamp.bits) bits in \(stamp.block)-pixel blocks is \(stamp.width) wide: it does not fit in"
          + " \(width)x\(height)")
    }
    self.width = width
    self.height = height
    self.stamp = stamp
    self.texture = Texture.shared(width: width + 2 * Self.margin, height: height + 2 * Self.margin, seed: seed)
  }

  /// Frame `number`: its content is the frame's own (it moves with the number), and `number` is
  /// stamped modulo the stamp's ``FrameStamp/modulus``.
  /// - Throws: ``MediaBufferError`` when the memory for the frame cannot be written.
  public func frame(_ number: Int) throws(MediaBufferError) -> PixelBuffer {
    try PixelBuffer(width: width, height: height, format: .i420) { memory, planes in
      draw(number, into: memory, planes: planes)
    }
  }

  /// Where the window into the texture is in frame `number`: its left and top edge (even), and
  /// where the box is.
  private func layout(_ number: Int) -> (x: Int, y: Int, box: (x: Int, y: Int, width: Int, height: Int)) {
    let phase = Double(number)
    let pan = Double(Self.margin) * 0.4
    let x = Self.margin + 2 * Int((pan * cos(2 * .pi * phase / 90) / 2).rounded())
    let y = Self.margin + 2 * Int((pan * sin(2 * .pi * phase / 90) / 2).rounded())
    let boxWidth = width / 4 & ~1
    let boxHeight = height / 3 & ~1
    // Across and back at 6 pixels a frame, bobbing up and down.
    let travel = max(2, width - boxWidth)
    let along = (6 * number) % (2 * travel)
    let boxX = (along < travel ? along : 2 * travel - along) & ~1
    let boxY = min(height - boxHeight, max(0, (height / 3 + Int(Double(height / 6) * sin(2 * .pi * phase / 75))) & ~1))
    return (x, y, (boxX, boxY, boxWidth, boxHeight))
  }

  /// The sideways sway of row `row` of frame `number`: even, at most 8 pixels either way.
  private static func sway(row: Int, _ number: Int) -> Int {
    2 * Int((4 * sin(2 * .pi * (Double(row) / 97 + Double(number) / 23))).rounded())
  }

  private func draw(_ number: Int, into memory: UnsafeMutableRawBufferPointer, planes: [PixelBuffer.Plane]) {
    guard let base = memory.baseAddress else { return }
    let (left, top, box) = layout(number)
    texture.luma.withUnsafeBytes { luma in
      texture.u.withUnsafeBytes { u in
        texture.v.withUnsafeBytes { v in
          let sources = [luma, u, v]
          for (index, plane) in planes.enumerated() {
            let scale = index == 0 ? 1 : 2
            let source = sources[index].baseAddress!
            let textureWidth = texture.width / scale
            let rowBytes = width / scale
            for row in 0..<plane.rows {
              let shift = (left + Self.sway(row: row * scale, number)) / scale
              (base + plane.offset + row * plane.stride).copyMemory(
                from: source + (row + top / scale) * textureWidth + shift, byteCount: rowBytes)
            }
            // The box: the texture's top left corner, with U and V swapped, at the box's place.
            let boxSource = index == 0 ? source : sources[3 - index].baseAddress!
            for row in 0..<box.height / scale {
              (base + plane.offset + (box.y / scale + row) * plane.stride + box.x / scale).copyMemory(
                from: boxSource + row * textureWidth, byteCount: box.width / scale)
            }
          }
        }
      }
    }
    // The stamp, on neutral colour.
    let luma = UnsafeMutableRawBufferPointer(rebasing: memory[planes[0].offset...])
    stamp.write(number, luma: luma, stride: planes[0].stride)
    for plane in planes.dropFirst() {
      for row in 0..<stamp.block / 2 {
        (base + plane.offset + row * plane.stride).initializeMemory(
          as: UInt8.self, repeating: 128, count: stamp.width / 2)
      }
    }
  }
}

/// A noise picture in I420's three planes (chroma at half size), made once per size and seed.
final class Texture: Sendable {
  /// The luma plane's size; the chroma planes are half as wide and high.
  let width: Int
  /// The luma plane's height.
  let height: Int
  /// Luma, `width` bytes a row.
  let luma: [UInt8]
  /// U, `width / 2` bytes a row.
  let u: [UInt8]
  /// V, `width / 2` bytes a row.
  let v: [UInt8]

  private static let made = Mutex<[String: Texture]>([:])

  /// The texture of this size and seed, made on first use.
  static func shared(width: Int, height: Int, seed: UInt64) -> Texture {
    let key = "\(width)x\(height)/\(seed)"
    if let texture = made.withLock({ $0[key] }) { return texture }
    let texture = Texture(width: width, height: height, seed: seed)
    return made.withLock { made in
      if made.count >= 8 { made.removeAll() }
      if let first = made[key] { return first }
      made[key] = texture
      return texture
    }
  }

  private init(width: Int, height: Int, seed: UInt64) {
    self.width = width
    self.height = height
    var random = SplitMix64(seed: seed)
    luma = Self.noise(
      width: width, height: height, octaves: [(64, 44), (16, 30), (4, 18)], grain: 10, mean: 126, random: &random)
    u = Self.noise(
      width: width / 2, height: height / 2, octaves: [(48, 36), (8, 10)], grain: 3, mean: 128, random: &random)
    v = Self.noise(
      width: width / 2, height: height / 2, octaves: [(48, 36), (8, 10)], grain: 3, mean: 128, random: &random)
  }

  /// A plane of value noise: for each `(cell, amplitude)`, random values on a grid of `cell`
  /// pixels interpolated bilinearly and scaled to ±`amplitude`, plus ±`grain` per pixel, around
  /// `mean`, clamped to video range.
  private static func noise(
    width: Int, height: Int, octaves: [(cell: Int, amplitude: Int)], grain: Int, mean: Int,
    random: inout SplitMix64
  ) -> [UInt8] {
    var sum = [Int32](repeating: Int32(mean * 256), count: width * height)
    sum.withUnsafeMutableBufferPointer { sum in
      for (cell, amplitude) in octaves {
        let columns = width / cell + 2
        let values = (0..<(columns * (height / cell + 2))).map { _ in Int32(random.next() % 513) - 256 }
        values.withUnsafeBufferPointer { grid in
          for y in 0..<height {
            let (above, fy) = ((y / cell) * columns, Int32(y % cell * 256 / cell))
            let below = above + columns
            for x in 0..<width {
              let (gx, fx) = (x / cell, Int32(x % cell * 256 / cell))
              let top = grid[above + gx] * (256 - fx) + grid[above + gx + 1] * fx
              let bottom = grid[below + gx] * (256 - fx) + grid[below + gx + 1] * fx
              // Grid values are ±256, so this is ±256 × amplitude: ±amplitude in the sum's units of 1/256.
              sum[y * width + x] += (top * (256 - fy) + bottom * fy) / 65_536 * Int32(amplitude)
            }
          }
        }
      }
      for index in 0..<sum.count {
        sum[index] += (Int32(random.next() % UInt64(2 * grain + 1)) - Int32(grain)) * 256
      }
    }
    return sum.map { UInt8(clamping: min(235, max(16, $0 / 256))) }
  }
}

/// A small, fast, seeded generator (SplitMix64): the same seed gives the same numbers (a
/// texture, a simulated path's losses).
public struct SplitMix64: Sendable {
  private var state: UInt64

  /// A generator that starts from `seed`.
  public init(seed: UInt64) { state = seed }

  /// The next number.
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

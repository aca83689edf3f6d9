import GStreamer
import Synchronization

/// Why a ``PixelBuffer`` or ``AudioPCMBuffer`` cannot be made: what does not fit, in numbers.
public struct MediaBufferError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What is wrong, such as `NV12 needs an even width and height, not 641x480`.
  public var reason: String

  /// An error saying `reason`.
  public init(_ reason: String) { self.reason = reason }

  /// The reason.
  public var description: String { reason }
}

/// A picture: the seeds' `CVPixelBuffer` on Linux. Its pixels live in a GStreamer buffer, so
/// handing a frame to a pipeline, a renderer or an encoder never copies them.
public struct PixelBuffer: Sendable {
  /// Where one plane lies in the buffer.
  public struct Plane: Sendable, Hashable {
    /// The byte offset of the plane's first row.
    public var offset: Int
    /// The bytes from one row to the next.
    public var stride: Int
    /// The number of rows.
    public var rows: Int
  }

  /// The width in pixels.
  public let width: Int
  /// The height in pixels.
  public let height: Int
  /// The pixel format.
  public let format: PixelFormat
  /// The luma range.
  public let colorRange: ColorRange
  /// The planes, in the format's order (Y then UV for NV12).
  public let planes: [Plane]
  /// The GStreamer buffer that holds the pixels (with a video meta describing the planes).
  public let buffer: Buffer

  /// The largest width or height accepted.
  public static let maximumSide = 16_384

  /// The size as ``Dimensions``.
  public var dimensions: Dimensions { Dimensions(width: Int32(width), height: Int32(height)) }

  /// A picture made from bytes the caller owns, copied once.
  ///
  /// - Parameters:
  ///   - width: the picture's width in pixels.
  ///   - height: the picture's height in pixels.
  ///   - format: how the pixels are laid out.
  ///   - colorRange: the range of the luma and chroma values (video range by default).
  ///   - bytes: the planes one after the other, each `strides[i]` bytes a row.
  ///   - strides: the bytes per row of each plane; nil for rows with no padding.
  /// - Throws: ``MediaBufferError`` when the size is zero, absurd or odd where the format needs
  ///   it even, a stride is shorter than a row, or the byte count is not what the planes take.
  public init(
    width: Int, height: Int, format: PixelFormat, bytes: UnsafeRawBufferPointer, strides: [Int]? = nil,
    colorRange: ColorRange = .video
  ) throws(MediaBufferError) {
    try Self.check(width: width, height: height, format: format)
    let strides = strides ?? (0..<format.planeCount).map { format.minimumStride(plane: $0, width: width) }
    guard strides.count == format.planeCount else {
      throw MediaBufferError("\(format) has \(format.planeCount) planes, \(strides.count) strides were given")
    }
    var planes: [Plane] = []
    var offset = 0
    for (index, stride) in strides.enumerated() {
      let minimum = format.minimumStride(plane: index, width: width)
      guard stride >= minimum, stride <= 4 * minimum + 4096 else {
        throw MediaBufferError(
          "plane \(index) of \(format) at width \(width) needs a stride of \(minimum) bytes or a little more, not \(stride)"
        )
      }
      let rows = format.planeHeight(plane: index, height: height)
      planes.append(Plane(offset: offset, stride: stride, rows: rows))
      offset += stride * rows
    }
    guard bytes.count == offset else {
      throw MediaBufferError(
        "\(width)x\(height) \(format) with strides \(strides) takes \(offset) bytes, not \(bytes.count)")
    }
    var buffer = Buffer(copying: bytes)
    try Self.attachLayout(&buffer, width: width, height: height, format: format, planes: planes)
    self.init(width: width, height: height, format: format, colorRange: colorRange, planes: planes, buffer: buffer)
  }

  /// A picture made from bytes the caller owns, copied once; see ``init(width:height:format:bytes:strides:colorRange:)-(_,_,_,UnsafeRawBufferPointer,_,_)``.
  public init(
    width: Int, height: Int, format: PixelFormat, bytes: [UInt8], strides: [Int]? = nil,
    colorRange: ColorRange = .video
  ) throws(MediaBufferError) {
    let result = bytes.withUnsafeBytes { raw in
      Result { () throws(MediaBufferError) in
        try PixelBuffer(
          width: width, height: height, format: format, bytes: raw, strides: strides, colorRange: colorRange)
      }
    }
    self = try result.get()
  }

  /// A picture in new memory of GStreamer's default layout, whose pixels `fill` writes in place:
  /// nothing is copied, as an app that draws or reads its frames straight into memory needs.
  ///
  /// - Parameters:
  ///   - width: the picture's width in pixels.
  ///   - height: the picture's height in pixels.
  ///   - format: how the pixels are laid out.
  ///   - colorRange: the range of the luma and chroma values (video range by default).
  ///   - fill: gets the memory and its planes; what it leaves there is the picture. It runs once,
  ///     before the initializer returns, on the calling thread.
  /// - Throws: ``MediaBufferError`` when the size is zero, absurd or odd where the format needs it even.
  public init(
    width: Int, height: Int, format: PixelFormat, colorRange: ColorRange = .video,
    fill: (UnsafeMutableRawBufferPointer, [Plane]) -> Void
  ) throws(MediaBufferError) {
    try Self.check(width: width, height: height, format: format)
    let (size, planes) = try Self.defaultLayout(width: width, height: height, format: format)
    var buffer = Buffer(size: size)
    do {
      try buffer.withUnsafeMutableBytes { fill($0, planes) }
    } catch {
      throw MediaBufferError("cannot write a new \(size)-byte buffer: \(error)")
    }
    try Self.attachLayout(&buffer, width: width, height: height, format: format, planes: planes)
    self.init(width: width, height: height, format: format, colorRange: colorRange, planes: planes, buffer: buffer)
  }

  /// A picture over a GStreamer buffer, without copying: its video meta gives the planes, or
  /// GStreamer's default layout when it has none.
  /// - Throws: ``MediaBufferError`` when the size is wrong for the format or the buffer is too small for it.
  public init(wrapping buffer: Buffer, width: Int, height: Int, format: PixelFormat, colorRange: ColorRange = .video)
    throws(MediaBufferError)
  {
    try Self.check(width: width, height: height, format: format)
    var planes: [Plane] = []
    if let meta = buffer.videoMeta {
      guard meta.width == width, meta.height == height, meta.format == format.gstreamerName else {
        throw MediaBufferError(
          "the buffer holds \(meta.width)x\(meta.height) \(meta.format), not \(width)x\(height) \(format)")
      }
      for index in 0..<format.planeCount {
        planes.append(
          Plane(
            offset: meta.offsets[index], stride: meta.strides[index],
            rows: format.planeHeight(plane: index, height: height)))
      }
    } else {
      planes = try Self.defaultLayout(width: width, height: height, format: format).planes
    }
    for (index, plane) in planes.enumerated() {
      let end = plane.offset + plane.stride * (plane.rows - 1) + format.minimumStride(plane: index, width: width)
      guard plane.stride >= format.minimumStride(plane: index, width: width), end <= buffer.size else {
        throw MediaBufferError("a \(buffer.size)-byte buffer is too small for \(width)x\(height) \(format)")
      }
    }
    self.init(width: width, height: height, format: format, colorRange: colorRange, planes: planes, buffer: buffer)
  }

  /// The part of the picture at (`x`, `y`) of `width`×`height` (even numbers), over the same
  /// bytes (no copy: a video meta describes the part); nil for formats other than I420 and
  /// NV12, or a part outside the picture.
  func cropped(x: Int, y: Int, width: Int, height: Int) -> PixelBuffer? {
    guard format == .i420 || format == .nv12, x >= 0, y >= 0, width > 0, height > 0, x + width <= self.width,
      y + height <= self.height, x % 2 == 0, y % 2 == 0, width % 2 == 0, height % 2 == 0
    else { return nil }
    // Luma moves by (x, y); chroma by half as many rows, and half as many bytes across in I420's
    // separate planes, as many in NV12's interleaved one.
    let offsets = planes.enumerated().map { index, plane in
      index == 0
        ? plane.offset + y * plane.stride + x
        : plane.offset + (y / 2) * plane.stride + (format == .nv12 ? x : x / 2)
    }
    var buffer = buffer.sharingMemory()
    do {
      try buffer.addVideoMeta(
        Buffer.VideoMeta(
          format: format.gstreamerName, width: width, height: height, offsets: offsets, strides: planes.map(\.stride)))
      return try PixelBuffer(wrapping: buffer, width: width, height: height, format: format, colorRange: colorRange)
    } catch {
      return nil
    }
  }

  /// GStreamer's default layout of a picture: its byte size and its planes.
  private static func defaultLayout(width: Int, height: Int, format: PixelFormat) throws(MediaBufferError) -> (
    size: Int, planes: [Plane]
  ) {
    let info: VideoInfo
    do {
      info = try VideoInfo(format: format.gstreamerName, width: width, height: height)
    } catch {
      throw MediaBufferError("\(error)")
    }
    let planes = (0..<format.planeCount).map { index in
      Plane(
        offset: info.offsets[index], stride: info.strides[index], rows: format.planeHeight(plane: index, height: height)
      )
    }
    return (info.size, planes)
  }

  /// A picture from checked parts.
  init(width: Int, height: Int, format: PixelFormat, colorRange: ColorRange, planes: [Plane], buffer: Buffer) {
    self.width = width
    self.height = height
    self.format = format
    self.colorRange = colorRange
    self.planes = planes
    self.buffer = buffer
  }

  private static func check(width: Int, height: Int, format: PixelFormat) throws(MediaBufferError) {
    guard width > 0, height > 0 else { throw MediaBufferError("a picture of \(width)x\(height) has no pixels") }
    guard width <= maximumSide, height <= maximumSide else {
      throw MediaBufferError("\(width)x\(height) is larger than \(maximumSide)x\(maximumSide)")
    }
    if format.needsEvenDimensions, width % 2 != 0 || height % 2 != 0 {
      throw MediaBufferError("\(format) needs an even width and height, not \(width)x\(height)")
    }
    if format.needsEvenWidth, width % 2 != 0 {
      throw MediaBufferError("\(format) needs an even width, not \(width)")
    }
  }

  private static func attachLayout(
    _ buffer: inout Buffer, width: Int, height: Int, format: PixelFormat, planes: [Plane]
  ) throws(MediaBufferError) {
    do {
      try buffer.addVideoMeta(
        Buffer.VideoMeta(
          format: format.gstreamerName, width: width, height: height, offsets: planes.map(\.offset),
          strides: planes.map(\.stride)))
    } catch {
      throw MediaBufferError("\(error)")
    }
  }

  /// The caps that describe this picture. Pictures of one format and size share one value, made
  /// once: a stream of frames does not parse caps for each.
  public var caps: Caps {
    // RGB formats are full range by definition: only YUV caps say which range they use.
    let colorimetry = format.isYUV ? ", colorimetry=\(colorRange.colorimetry)" : ""
    let text =
      "video/x-raw, format=\(format.gstreamerName), width=\(width), height=\(height), framerate=0/1\(colorimetry)"
    return Self.madeCaps.withLock { made in
      if let caps = made[text] { return caps }
      // The fields are all valid by construction, so the caps always parse.
      let caps = try! Caps(text)
      if made.count >= 16 { made.removeAll() }
      made[text] = caps
      return caps
    }
  }

  /// Caps made so far, by their text.
  private static let madeCaps = Mutex<[String: Caps]>([:])

  /// The frame's capture time on the monotonic clock (`CLOCK_MONOTONIC`, GStreamer's system
  /// clock), nil when not set: camera frames and pushed frames carry it, and publications send
  /// it as their RTP time, so a frame and the audio captured with it play together.
  public var timestamp: ClockTime? { buffer.pts }

  /// Reads plane `index` in place: `stride × rows` bytes (the last row may end early).
  /// - Throws: ``MediaBufferError`` when the memory cannot be read.
  public func withPlane<R>(_ index: Int, _ body: (UnsafeRawBufferPointer, Plane) -> R) throws(MediaBufferError) -> R {
    precondition(index >= 0 && index < planes.count, "plane \(index) out of 0..<\(planes.count)")
    let plane = planes[index]
    let rowBytes = format.minimumStride(plane: index, width: width)
    do {
      return try buffer.withUnsafeBytes { all in
        let length = plane.stride * (plane.rows - 1) + rowBytes
        return body(UnsafeRawBufferPointer(rebasing: all[plane.offset..<(plane.offset + length)]), plane)
      }
    } catch {
      throw MediaBufferError("\(error)")
    }
  }

  /// A copy of plane `index`'s pixels, rows packed with no padding.
  public func planeBytes(_ index: Int) throws(MediaBufferError) -> [UInt8] {
    let rowBytes = format.minimumStride(plane: index, width: width)
    return try withPlane(index) { bytes, plane in
      var packed: [UInt8] = []
      packed.reserveCapacity(rowBytes * plane.rows)
      for row in 0..<plane.rows {
        packed.append(contentsOf: bytes[(row * plane.stride)..<(row * plane.stride + rowBytes)])
      }
      return packed
    }
  }

  /// A copy with a new GStreamer buffer of the same pixels and layout, such as one returned by a pipeline.
  func replacingBuffer(_ buffer: Buffer) -> PixelBuffer {
    PixelBuffer(width: width, height: height, format: format, colorRange: colorRange, planes: planes, buffer: buffer)
  }
}

/// The seeds' Apple picture type: a port that keeps it fails to compile with this message
/// instead of declaring a processor or renderer method nothing calls.
@available(*, unavailable, renamed: "PixelBuffer", message: "RevueSDK's picture is PixelBuffer")
public typealias CVPixelBuffer = PixelBuffer

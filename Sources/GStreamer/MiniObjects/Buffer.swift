internal import CGStreamer
internal import CGStreamerVideo

/// A chunk of media data with its timestamps: a video frame, some audio samples, an RTP packet.
///
/// A buffer is a value. Copies share GStreamer's buffer (and its memory); the first change to a
/// shared copy makes a new `GstBuffer` that still shares the memory, and writing bytes copies
/// the memory only when someone else holds it. The corresponding C type is `GstBuffer`.
public struct Buffer: Sendable {
  /// Owns one reference to the buffer.
  // Safety: GstBuffer reference counting is atomic; the buffer is only changed when uniquely owned and writable.
  final class Storage: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<GstBuffer>
    /// False once the reference has been handed to GStreamer by ``Buffer/take()``.
    var ownsReference = true
    init(adopting pointer: UnsafeMutablePointer<GstBuffer>) { self.pointer = pointer }
    deinit { if ownsReference { gst_buffer_unref(pointer) } }
  }

  private var storage: Storage

  /// Adopts a buffer reference (transfer full).
  init(adopting pointer: UnsafeMutablePointer<GstBuffer>) { storage = Storage(adopting: pointer) }

  /// Takes a reference of its own to a borrowed buffer.
  init(retaining pointer: UnsafeMutablePointer<GstBuffer>) { storage = Storage(adopting: gst_buffer_ref(pointer)) }

  /// A buffer of `size` uninitialized bytes from GStreamer's default allocator.
  ///
  /// The corresponding C function is `gst_buffer_new_allocate`.
  public init(size: Int) {
    Gst.ensureInitialized()
    precondition(size >= 0, "a buffer size cannot be negative")
    storage = Storage(adopting: gst_buffer_new_allocate(nil, gsize(size), nil))
  }

  /// A buffer of `size` uninitialized bytes whose first byte lies on a multiple of `alignment`
  /// (a power of two): SIMD conversion code runs fastest on aligned rows.
  ///
  /// The corresponding C function is `gst_buffer_new_allocate` with `GstAllocationParams`.
  public init(size: Int, alignment: Int) {
    Gst.ensureInitialized()
    precondition(size >= 0, "a buffer size cannot be negative")
    precondition(alignment > 0 && alignment & (alignment - 1) == 0, "an alignment is a power of two")
    var params = GstAllocationParams()
    gst_allocation_params_init(&params)
    params.align = gsize(alignment - 1)
    storage = Storage(adopting: gst_buffer_new_allocate(nil, gsize(size), &params))
  }

  /// A buffer holding a copy of `bytes`, 64-byte aligned.
  public init(copying bytes: UnsafeRawBufferPointer) {
    self.init(size: bytes.count, alignment: 64)
    if let base = bytes.baseAddress, bytes.count > 0 { gst_buffer_fill(storage.pointer, 0, base, gsize(bytes.count)) }
  }

  /// A buffer holding a copy of `bytes`.
  public init(copying bytes: [UInt8]) {
    self = bytes.withUnsafeBytes { Buffer(copying: $0) }
  }

  /// A buffer over memory the caller owns, without copying it.
  ///
  /// `release` runs once GStreamer no longer uses the memory (on whatever thread drops the last
  /// reference); until then the memory must stay valid and unchanged by anyone else.
  /// The corresponding C function is `gst_buffer_new_wrapped_full`.
  public init(wrapping memory: UnsafeMutableRawBufferPointer, release: @escaping @Sendable () -> Void) {
    Gst.ensureInitialized()
    let box = Unmanaged.passRetained(ReleaseBox(release)).toOpaque()
    storage = Storage(
      adopting: gst_buffer_new_wrapped_full(
        GstMemoryFlags(rawValue: 0), memory.baseAddress, gsize(memory.count), 0, gsize(memory.count), box,
        Trampolines.releaseWrappedMemory))
  }

  /// The buffer pointer, valid while this value lives.
  var pointer: UnsafeMutablePointer<GstBuffer> { storage.pointer }

  /// Calls `body` with the pointer, keeping the buffer alive for the call.
  func withPointer<R>(_ body: (UnsafeMutablePointer<GstBuffer>) throws -> R) rethrows -> R {
    try withExtendedLifetime(storage) { try body(storage.pointer) }
  }

  /// Passes this value's reference on to C (transfer full) without touching the reference count when
  /// no other copy exists, so that GStreamer sees a writable buffer and never copies it.
  consuming func take() -> UnsafeMutablePointer<GstBuffer> {
    if isKnownUniquelyReferenced(&storage) {
      storage.ownsReference = false
      return storage.pointer
    }
    return gst_buffer_ref(storage.pointer)
  }

  /// Makes the buffer uniquely owned and writable before a change (a shallow copy: memory is shared).
  private mutating func makeWritable() {
    if !isKnownUniquelyReferenced(&storage) || gst_mini_object_is_writable(cgst_mini_object(storage.pointer)) == 0 {
      storage = Storage(adopting: gst_buffer_copy(storage.pointer))
    }
  }

  // MARK: - Size and timing

  /// The number of bytes.
  public var size: Int { Int(gst_buffer_get_size(storage.pointer)) }

  /// The presentation timestamp, nil when not set.
  public var pts: ClockTime? {
    get { ClockTime.from(storage.pointer.pointee.pts) }
    set {
      makeWritable()
      storage.pointer.pointee.pts = ClockTime.raw(newValue)
    }
  }

  /// The decoding timestamp, nil when not set.
  public var dts: ClockTime? {
    get { ClockTime.from(storage.pointer.pointee.dts) }
    set {
      makeWritable()
      storage.pointer.pointee.dts = ClockTime.raw(newValue)
    }
  }

  /// The duration, nil when not set.
  public var duration: ClockTime? {
    get { ClockTime.from(storage.pointer.pointee.duration) }
    set {
      makeWritable()
      storage.pointer.pointee.duration = ClockTime.raw(newValue)
    }
  }

  /// A new buffer over the same memory (no byte copied), with this one's timestamps and flags
  /// but none of its metas: to describe the same bytes another way (a crop, with
  /// ``addVideoMeta(_:)``).
  ///
  /// The corresponding C function is `gst_buffer_copy_region` with `GST_BUFFER_COPY_MEMORY`.
  public func sharingMemory() -> Buffer {
    let flags = GstBufferCopyFlags(
      rawValue: GST_BUFFER_COPY_MEMORY.rawValue | GST_BUFFER_COPY_TIMESTAMPS.rawValue | GST_BUFFER_COPY_FLAGS.rawValue)
    return Buffer(adopting: gst_buffer_copy_region(storage.pointer, flags, 0, gsize.max)!)
  }

  /// A media-specific offset (the frame number for video sources), nil when not set.
  public var offset: UInt64? {
    get { storage.pointer.pointee.offset == guint64.max ? nil : UInt64(storage.pointer.pointee.offset) }
    set {
      makeWritable()
      storage.pointer.pointee.offset = newValue.map { guint64($0) } ?? guint64.max
    }
  }

  /// Buffer flags.
  ///
  /// The corresponding C type is `GstBufferFlags`.
  public struct Flags: OptionSet, Sendable, Hashable {
    /// The `GstBufferFlags` bits.
    public let rawValue: UInt32
    /// Flags from `GstBufferFlags` bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// A discontinuity in the stream.
    public static let discont = Flags(rawValue: GST_BUFFER_FLAG_DISCONT.rawValue)
    /// Not decodable by itself (not a keyframe).
    public static let deltaUnit = Flags(rawValue: GST_BUFFER_FLAG_DELTA_UNIT.rawValue)
    /// The data may be corrupted.
    public static let corrupted = Flags(rawValue: GST_BUFFER_FLAG_CORRUPTED.rawValue)
    /// Decode but do not show.
    public static let decodeOnly = Flags(rawValue: GST_BUFFER_FLAG_DECODE_ONLY.rawValue)
    /// A marker (the end of a frame in RTP).
    public static let marker = Flags(rawValue: GST_BUFFER_FLAG_MARKER.rawValue)
    /// May be dropped without harm.
    public static let droppable = Flags(rawValue: GST_BUFFER_FLAG_DROPPABLE.rawValue)
    /// A gap: the data is silence or nothing, and elements may skip it.
    public static let gap = Flags(rawValue: GST_BUFFER_FLAG_GAP.rawValue)
  }

  /// The buffer's flags.
  public var flags: Flags {
    get { Flags(rawValue: storage.pointer.pointee.mini_object.flags & 0xFFFF_FFF0) }
    set {
      makeWritable()
      let kept = storage.pointer.pointee.mini_object.flags & 0xF
      storage.pointer.pointee.mini_object.flags = kept | (newValue.rawValue & 0xFFFF_FFF0)
    }
  }

  // MARK: - Bytes

  /// Reads the bytes in place.
  ///
  /// The corresponding C functions are `gst_buffer_map` and `gst_buffer_unmap`.
  /// - Throws: ``GStreamerError/bufferAccess(_:)`` when the memory cannot be mapped.
  public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) throws(GStreamerError) -> R {
    var info = GstMapInfo()
    guard gst_buffer_map(storage.pointer, &info, GST_MAP_READ) != 0 else {
      throw .bufferAccess("the buffer's memory cannot be mapped for reading")
    }
    defer { gst_buffer_unmap(storage.pointer, &info) }
    return body(UnsafeRawBufferPointer(start: info.data, count: Int(info.size)))
  }

  /// Changes the bytes in place, after making the buffer (and its memory) writable.
  ///
  /// - Throws: ``GStreamerError/bufferAccess(_:)`` when the memory cannot be mapped for writing.
  public mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) -> R) throws(GStreamerError)
    -> R
  {
    makeWritable()
    var info = GstMapInfo()
    guard gst_buffer_map(storage.pointer, &info, GST_MAP_WRITE) != 0 else {
      throw .bufferAccess("the buffer's memory cannot be mapped for writing")
    }
    defer { gst_buffer_unmap(storage.pointer, &info) }
    return body(UnsafeMutableRawBufferPointer(start: info.data, count: Int(info.size)))
  }

  /// A copy of the bytes.
  public var bytes: [UInt8] {
    let count = size
    return [UInt8](unsafeUninitializedCapacity: count) { target, initialized in
      initialized = Int(gst_buffer_extract(storage.pointer, 0, target.baseAddress, gsize(count)))
    }
  }

  /// The number of memory blocks the buffer is made of.
  public var memoryCount: Int { Int(gst_buffer_n_memory(storage.pointer)) }

  /// The address of the first byte of the first memory block, to check that a path does not copy.
  public var dataAddress: UnsafeRawPointer? {
    guard memoryCount > 0 else { return nil }
    var info = GstMapInfo()
    guard gst_buffer_map(storage.pointer, &info, GST_MAP_READ) != 0 else { return nil }
    defer { gst_buffer_unmap(storage.pointer, &info) }
    return UnsafeRawPointer(info.data)
  }

  // MARK: - Video meta

  /// Where the planes of a video frame lie in the buffer.
  ///
  /// The corresponding C type is `GstVideoMeta`.
  public struct VideoMeta: Sendable, Hashable {
    /// The pixel format, by GStreamer's name (`NV12`, `I420`, `BGRA`…).
    public var format: String
    /// The width in pixels.
    public var width: Int
    /// The height in pixels.
    public var height: Int
    /// The byte offset of each plane.
    public var offsets: [Int]
    /// The bytes per row of each plane.
    public var strides: [Int]

    /// A description of a frame's layout.
    public init(format: String, width: Int, height: Int, offsets: [Int], strides: [Int]) {
      self.format = format
      self.width = width
      self.height = height
      self.offsets = offsets
      self.strides = strides
    }
  }

  /// The frame layout attached to the buffer, if any.
  ///
  /// The corresponding C function is `gst_buffer_get_video_meta`.
  public var videoMeta: VideoMeta? {
    guard let meta = gst_buffer_get_video_meta(storage.pointer) else { return nil }
    let planes = Int(meta.pointee.n_planes)
    let offsets = Swift.withUnsafeBytes(of: meta.pointee.offset) { Array($0.bindMemory(to: gsize.self).prefix(planes)) }
    let strides = Swift.withUnsafeBytes(of: meta.pointee.stride) { Array($0.bindMemory(to: gint.self).prefix(planes)) }
    return VideoMeta(
      format: String(cString: gst_video_format_to_string(meta.pointee.format)), width: Int(meta.pointee.width),
      height: Int(meta.pointee.height), offsets: offsets.map { Int($0) }, strides: strides.map { Int($0) })
  }

  /// Attaches a frame layout.
  ///
  /// The corresponding C function is `gst_buffer_add_video_meta_full`.
  /// - Throws: ``GStreamerError/bufferAccess(_:)`` when the format is unknown, the plane count does
  ///   not match it, or a plane would lie outside the buffer.
  public mutating func addVideoMeta(_ meta: VideoMeta) throws(GStreamerError) {
    let format = gst_video_format_from_string(meta.format)
    guard format != GST_VIDEO_FORMAT_UNKNOWN, let info = gst_video_format_get_info(format) else {
      throw .bufferAccess("unknown video format '\(meta.format)'")
    }
    let planes = Int(info.pointee.n_planes)
    guard meta.offsets.count == planes, meta.strides.count == planes else {
      throw .bufferAccess("\(meta.format) has \(planes) planes, the layout gives \(meta.offsets.count)")
    }
    // GstVideoMeta keeps the size in `guint`s and the strides in `gint`s (fuzzing found a trap).
    guard meta.width > 0, meta.height > 0, meta.width <= Int(guint.max), meta.height <= Int(guint.max) else {
      throw .bufferAccess("a frame of \(meta.width)x\(meta.height) pixels cannot be described")
    }
    guard meta.offsets.allSatisfy({ $0 >= 0 && $0 < size }), meta.strides.allSatisfy({ $0 > 0 && $0 <= Int(gint.max) })
    else {
      throw .bufferAccess("a plane of the layout lies outside the \(size)-byte buffer")
    }
    makeWritable()
    var offsets = [gsize](repeating: 0, count: 4)
    var strides = [gint](repeating: 0, count: 4)
    for plane in 0..<planes {
      offsets[plane] = gsize(meta.offsets[plane])
      strides[plane] = gint(meta.strides[plane])
    }
    _ = gst_buffer_add_video_meta_full(
      storage.pointer, GST_VIDEO_FRAME_FLAG_NONE, format, guint(meta.width), guint(meta.height), guint(planes),
      &offsets, &strides)
  }
}

/// Holds the release closure of memory wrapped by ``Buffer/init(wrapping:release:)``.
final class ReleaseBox: Sendable {
  let release: @Sendable () -> Void
  init(_ release: @escaping @Sendable () -> Void) { self.release = release }
}

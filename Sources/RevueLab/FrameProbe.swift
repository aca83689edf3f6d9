import RevueSDK
import Synchronization

/// A renderer that notes, for each frame it gets, the number stamped in it (``FrameStamp``), a
/// hash of the whole decoded picture, and when it came: what ``FrameJudge`` compares between a
/// receiver under test and a reference receiver that decoded the same stream without loss.
///
/// VP8 and H.264 decoders show a frame decoded from a broken reference without a word, so a
/// decoder's messages prove nothing: a frame is known intact only when its pixels are exactly
/// those of the reference's decode of the same frame. The hash (``hash(_:)``) covers every
/// pixel of every plane, and nothing else (not the padding at the end of rows). Frames whose
/// stamp cannot be read clearly are only counted (``unreadableFrames``).
///
/// Renders come on the receiving thread; everything here can be called from any thread. A frame
/// costs a few hundred reads for the stamp and one pass over its bytes for the hash (0.3–0.4 ms
/// of CPU for 720p in a debug build), and its record 32 bytes: minutes of frames take a few
/// megabytes. Frame numbers wrap at the stamp's ``FrameStamp/modulus`` (after 36 minutes at
/// 30 fps with 16 bits): judge runs shorter than that.
public final class FrameProbe: VideoRenderer, Sendable {
  /// One frame rendered.
  public struct Record: Sendable, Hashable {
    /// The frame's number, as read from its stamp.
    public var number: Int
    /// The hash of the decoded picture (``FrameProbe/hash(_:)``).
    public var hash: UInt64
    /// When the renderer got it.
    public var time: ContinuousClock.Instant

    /// A record of frame `number` with picture hash `hash`, rendered at `time`.
    public init(number: Int, hash: UInt64, time: ContinuousClock.Instant) {
      self.number = number
      self.hash = hash
      self.time = time
    }
  }

  /// The stamp read from each frame.
  public let stamp: FrameStamp

  private struct State {
    var records: [Record] = []
    var unreadable = 0
    var highest = Int.min
    var waiters: [(id: Int, enough: @Sendable (Int, Int) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
    var nextWaiter = 0
  }

  private let state = Mutex(State())

  /// A probe that reads `stamp` from each frame.
  public init(stamp: FrameStamp) {
    self.stamp = stamp
    state.withLock { $0.records.reserveCapacity(4096) }
  }

  /// Reads the frame's stamp, hashes its picture and records both with the time.
  public func render(pixelBuffer: PixelBuffer) {
    let time = ContinuousClock.now
    guard let number = stamp.read(pixelBuffer) else {
      state.withLock { $0.unreadable += 1 }
      return
    }
    let hash = Self.hash(pixelBuffer)
    let ready = state.withLock { state in
      state.records.append(Record(number: number, hash: hash, time: time))
      state.highest = max(state.highest, number)
      let (count, highest) = (state.records.count, state.highest)
      var ready: [CheckedContinuation<Void, Never>] = []
      state.waiters.removeAll { waiter in
        guard waiter.enough(count, highest) else { return false }
        ready.append(waiter.continuation)
        return true
      }
      return ready
    }
    for continuation in ready { continuation.resume() }
  }

  /// The frames recorded so far, in the order they came.
  public var records: [Record] { state.withLock { $0.records } }

  /// Frames rendered whose stamp could not be read clearly: not recorded.
  public var unreadableFrames: Int { state.withLock { $0.unreadable } }

  /// The number of frames recorded so far.
  public var count: Int { state.withLock { $0.records.count } }

  /// Waits until a frame numbered `number` or more has been recorded (returns at once if one
  /// has), or the task is cancelled.
  public func wait(forNumber number: Int) async { await wait { _, highest in highest >= number } }

  /// Waits until `count` frames in all have been recorded (returns at once if they have), or
  /// the task is cancelled.
  public func wait(forCount count: Int) async { await wait { recorded, _ in recorded >= count } }

  /// Waits until `enough(records so far, highest number so far)` holds after a frame, or the
  /// task is cancelled.
  private func wait(until enough: @escaping @Sendable (Int, Int) -> Bool) async {
    let id = state.withLock { state in
      defer { state.nextWaiter += 1 }
      return state.nextWaiter
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let done = state.withLock { state in
          guard !enough(state.records.count, state.highest), !Task.isCancelled else { return true }
          state.waiters.append((id, enough, continuation))
          return false
        }
        if done { continuation.resume() }
      }
    } onCancel: {
      let waiter = state.withLock { state in
        state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0).continuation }
      }
      waiter?.resume()
    }
  }

  // MARK: - Hash

  /// A 64-bit hash of a picture's pixels: every plane, each row's pixels without the padding
  /// after them, so two pictures with the same pixels hash the same whatever their strides.
  ///
  /// FNV-1a over 8-byte words, in 8 interleaved lanes (the words of each 64-byte run go to
  /// lanes 0 to 7; the rest of a row, a word then a byte at a time, to lane 0), the lanes
  /// folded together with the size and format at the end. It is no cryptographic hash: it tells
  /// a decoded picture from a differently decoded one, which is what a judge of frames needs.
  /// The lanes keep it fast in a debug build (0.3–0.4 ms of CPU for a 720p I420 picture).
  public static func hash(_ frame: PixelBuffer) -> UInt64 {
    var lanes = Lanes()
    for index in 0..<frame.planes.count {
      let rowBytes = rowBytes(of: frame, plane: index)
      _ = try? frame.withPlane(index) { bytes, plane in
        guard let base = bytes.baseAddress else { return }
        for row in 0..<plane.rows {
          lanes.add(base + row * plane.stride, count: min(rowBytes, bytes.count - row * plane.stride))
        }
      }
    }
    return lanes.folded(with: [UInt64(frame.width), UInt64(frame.height), UInt64(frame.planes.count)])
  }

  /// The bytes of a row of pixels in plane `index` (without padding).
  private static func rowBytes(of frame: PixelBuffer, plane index: Int) -> Int {
    switch (frame.format, index) {
    case (.i420, 0), (.nv12, 0), (.gray8, _): frame.width
    case (.i420, _): (frame.width + 1) / 2
    case (.nv12, _): frame.width + frame.width % 2
    case (.bgra, _), (.rgba, _): frame.width * 4
    case (.yuy2, _): (frame.width + 1) / 2 * 4
    }
  }

  /// The eight FNV-1a states of ``hash(_:)``.
  private struct Lanes {
    static let prime: UInt64 = 0x100_0000_01B3
    static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325
    var h0 = offsetBasis
    var h1 = offsetBasis ^ 1
    var h2 = offsetBasis ^ 2
    var h3 = offsetBasis ^ 3
    var h4 = offsetBasis ^ 4
    var h5 = offsetBasis ^ 5
    var h6 = offsetBasis ^ 6
    var h7 = offsetBasis ^ 7

    /// Adds `count` bytes at `start`.
    mutating func add(_ start: UnsafeRawPointer, count: Int) {
      let prime = Self.prime
      var offset = 0
      // Whole 64-byte runs, as words when the row is aligned for them (it is, in practice).
      if Int(bitPattern: start) % 8 == 0 {
        var word = start.assumingMemoryBound(to: UInt64.self)
        while offset + 64 <= count {
          h0 = (h0 ^ word[0]) &* prime
          h1 = (h1 ^ word[1]) &* prime
          h2 = (h2 ^ word[2]) &* prime
          h3 = (h3 ^ word[3]) &* prime
          h4 = (h4 ^ word[4]) &* prime
          h5 = (h5 ^ word[5]) &* prime
          h6 = (h6 ^ word[6]) &* prime
          h7 = (h7 ^ word[7]) &* prime
          word += 8
          offset += 64
        }
      }
      while offset + 8 <= count {
        h0 = (h0 ^ start.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* prime
        offset += 8
      }
      while offset < count {
        h0 = (h0 ^ UInt64(start.load(fromByteOffset: offset, as: UInt8.self))) &* prime
        offset += 1
      }
    }

    /// The lanes and `extra` values folded into one hash.
    func folded(with extra: [UInt64]) -> UInt64 {
      var hash = Self.offsetBasis
      for value in [h0, h1, h2, h3, h4, h5, h6, h7] + extra { hash = (hash ^ value) &* Self.prime }
      return hash
    }
  }
}

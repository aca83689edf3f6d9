internal import CGStreamer

/// A buffer with the caps that describe it, as an appsink hands them out.
///
/// The corresponding C type is `GstSample`.
public struct Sample: Sendable {
  /// Owns one reference to the sample.
  // Safety: samples are immutable and their reference counting is atomic.
  final class Storage: @unchecked Sendable {
    let pointer: OpaquePointer
    init(adopting pointer: OpaquePointer) { self.pointer = pointer }
    deinit { gst_sample_unref(pointer) }
  }

  private let storage: Storage

  /// Adopts a sample reference (transfer full).
  init(adopting pointer: OpaquePointer) { storage = Storage(adopting: pointer) }

  /// A sample of `buffer` described by `caps`.
  ///
  /// The corresponding C function is `gst_sample_new`.
  public init(buffer: Buffer?, caps: Caps?) {
    Gst.ensureInitialized()
    let pointer = gst_sample_new(buffer?.pointer, caps.map { $0.withPointer { $0 } }, nil, nil)!
    storage = Storage(adopting: pointer)
    withExtendedLifetime((buffer, caps)) {}
  }

  /// Calls `body` with the sample pointer, valid only inside the call.
  func withPointer<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
    try withExtendedLifetime(storage) { try body(storage.pointer) }
  }

  /// The buffer, if the sample has one.
  public var buffer: Buffer? { gst_sample_get_buffer(storage.pointer).map { Buffer(retaining: $0) } }

  /// The caps, if the sample has them.
  public var caps: Caps? { gst_sample_get_caps(storage.pointer).map { Caps(retaining: $0) } }

  /// `time` (the PTS of the sample's buffer, say) as a running time in the sample's segment; nil
  /// without a segment or outside it. A buffer's PTS is a running time only in a segment that
  /// starts at 0: encoders that reorder frames (x264enc) start theirs at 1000 hours.
  ///
  /// The corresponding C functions are `gst_sample_get_segment` and `gst_segment_to_running_time`.
  public func runningTime(of time: ClockTime) -> ClockTime? {
    // In the segment's own format (an appsink's is time): `GST_FORMAT_TIME` named here did not
    // resolve in a clean build (a fresh module cache), qualified or not.
    guard let segment = gst_sample_get_segment(storage.pointer) else { return nil }
    let running = UInt64(gst_segment_to_running_time(segment, segment.pointee.format, guint64(time.nanoseconds)))
    return running == UInt64.max ? nil : ClockTime(nanoseconds: running)
  }
}

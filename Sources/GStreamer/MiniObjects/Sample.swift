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
}

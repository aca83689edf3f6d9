internal import CGStreamer
internal import CGStreamerApp

/// The element through which an application pushes its own buffers into a pipeline.
///
/// The corresponding C type is `GstAppSrc`.
public final class AppSrc: Element, @unchecked Sendable {
  var appSrcPointer: UnsafeMutablePointer<GstAppSrc> { rawPointer.assumingMemoryBound(to: GstAppSrc.self) }

  /// A new `appsrc` element.
  /// - Throws: ``GStreamerError/elementNotFound(factory:package:)`` when gst-plugins-base is missing.
  public static func make(name: String? = nil) throws(GStreamerError) -> AppSrc {
    try Element.make("appsrc", name: name, as: AppSrc.self)
  }

  /// The caps of the buffers pushed, nil when they are not known.
  public var caps: Caps? {
    get { gst_app_src_get_caps(appSrcPointer).map { Caps(adopting: $0) } }
    set { Caps.withPointer(newValue) { gst_app_src_set_caps(appSrcPointer, $0) } }
  }

  /// What the source's segment counts in.
  public enum Format: String, Sendable, Hashable {
    /// Bytes (appsrc's default, for byte streams such as files).
    case bytes
    /// Time: buffers carry timestamps, as live media needs.
    case time
    /// Buffers.
    case buffers
  }

  /// What the source's segment counts in: set ``Format/time`` for timestamped media.
  public var format: Format {
    get { (try? get("format", as: String.self)).flatMap(Format.init(rawValue:)) ?? .bytes }
    set { try? set("format", Value.enumeration(newValue.rawValue)) }
  }

  /// Whether it is a live source (timestamps follow the running clock).
  public var isLive: Bool {
    get { (try? get("is-live", as: Bool.self)) ?? false }
    set { try? set("is-live", newValue) }
  }

  /// The bytes queued before ``push(_:)`` reports enough data (or blocks, with ``blocks``); 0 means no limit.
  public var maxBytes: UInt64 {
    get { UInt64(gst_app_src_get_max_bytes(appSrcPointer)) }
    set { gst_app_src_set_max_bytes(appSrcPointer, guint64(newValue)) }
  }

  /// The buffers queued before the queue is full; 0 means no limit.
  public var maxBuffers: UInt64 {
    get { UInt64(gst_app_src_get_max_buffers(appSrcPointer)) }
    set { gst_app_src_set_max_buffers(appSrcPointer, guint64(newValue)) }
  }

  /// Whether ``push(_:)`` blocks while the queue is full, instead of queueing past the limit.
  public var blocks: Bool {
    get { (try? get("block", as: Bool.self)) ?? false }
    set { try? set("block", newValue) }
  }

  /// What a full queue drops, when it does not block.
  ///
  /// The corresponding C type is `GstAppLeakyType`.
  public enum Leaky: Sendable, Hashable {
    /// Nothing: the queue grows past the limit.
    case none
    /// The buffer being pushed.
    case upstream
    /// The oldest buffer in the queue.
    case downstream
  }

  /// What a full queue drops.
  public var leaky: Leaky {
    get {
      switch gst_app_src_get_leaky_type(appSrcPointer) {
      case GST_APP_LEAKY_TYPE_UPSTREAM: .upstream
      case GST_APP_LEAKY_TYPE_DOWNSTREAM: .downstream
      default: .none
      }
    }
    set {
      let type: GstAppLeakyType =
        switch newValue {
        case .none: GST_APP_LEAKY_TYPE_NONE
        case .upstream: GST_APP_LEAKY_TYPE_UPSTREAM
        case .downstream: GST_APP_LEAKY_TYPE_DOWNSTREAM
        }
      gst_app_src_set_leaky_type(appSrcPointer, type)
    }
  }

  /// The number of buffers queued and not yet pushed downstream.
  public var queuedBuffers: UInt64 { UInt64(gst_app_src_get_current_level_buffers(appSrcPointer)) }

  /// Pushes a buffer. The buffer's reference passes to the pipeline without copying its memory
  /// (and, when this was its only copy, without even a new reference, so downstream may write in place).
  ///
  /// The corresponding C function is `gst_app_src_push_buffer`.
  /// - Throws: ``FlowError/flushing`` while the source is stopped, ``FlowError/eos`` after
  ///   ``endOfStream()``.
  public func push(_ buffer: consuming Buffer) throws(FlowError) {
    let result = gst_app_src_push_buffer(appSrcPointer, buffer.take())
    if let error = FlowError(result) { throw error }
  }

  /// Pushes a sample: its buffer, with its caps when they differ from the current ones.
  ///
  /// The corresponding C function is `gst_app_src_push_sample`.
  public func push(sample: Sample) throws(FlowError) {
    let result = sample.withPointer { gst_app_src_push_sample(appSrcPointer, $0) }
    if let error = FlowError(result) { throw error }
  }

  /// Signals that no more buffers come: the pipeline drains and posts EOS.
  ///
  /// The corresponding C function is `gst_app_src_end_of_stream`.
  /// - Throws: ``FlowError/flushing`` while the source is stopped.
  public func endOfStream() throws(FlowError) {
    if let error = FlowError(gst_app_src_end_of_stream(appSrcPointer)) { throw error }
  }

  /// Calls `needData` when the queue runs low (with the bytes wanted, 0 when unknown) and
  /// `enoughData` when it is full: the back-pressure of a pipeline that cannot keep up.
  /// Both run on GStreamer's streaming thread and must return quickly.
  /// Setting new callbacks replaces the old ones.
  ///
  /// The corresponding C function is `gst_app_src_set_callbacks`.
  public func setCallbacks(
    needData: (@Sendable (_ length: UInt) -> Void)? = nil, enoughData: (@Sendable () -> Void)? = nil
  ) {
    var callbacks = GstAppSrcCallbacks()
    callbacks.need_data = needData == nil ? nil : Trampolines.appSrcNeedData
    callbacks.enough_data = enoughData == nil ? nil : Trampolines.appSrcEnoughData
    let box = Unmanaged.passRetained(AppSrcCallbacks(needData: needData, enoughData: enoughData)).toOpaque()
    gst_app_src_set_callbacks(appSrcPointer, &callbacks, box, Trampolines.releaseAppSrcCallbacks)
  }
}

/// The Swift side of an appsrc's callbacks.
final class AppSrcCallbacks: Sendable {
  let needData: (@Sendable (UInt) -> Void)?
  let enoughData: (@Sendable () -> Void)?
  init(needData: (@Sendable (UInt) -> Void)?, enoughData: (@Sendable () -> Void)?) {
    self.needData = needData
    self.enoughData = enoughData
  }
}

extension Trampolines {
  static let appSrcNeedData: @convention(c) (UnsafeMutablePointer<GstAppSrc>?, guint, gpointer?) -> Void = {
    _, length, userData in
    Unmanaged<AppSrcCallbacks>.fromOpaque(userData!).takeUnretainedValue().needData?(UInt(length))
  }

  static let appSrcEnoughData: @convention(c) (UnsafeMutablePointer<GstAppSrc>?, gpointer?) -> Void = {
    _, userData in
    Unmanaged<AppSrcCallbacks>.fromOpaque(userData!).takeUnretainedValue().enoughData?()
  }

  static let releaseAppSrcCallbacks: GDestroyNotify = { userData in
    Unmanaged<AppSrcCallbacks>.fromOpaque(userData!).release()
  }
}

internal import CGStreamer
internal import CGStreamerApp

/// The element through which an application takes buffers out of a pipeline.
///
/// The corresponding C type is `GstAppSink`.
public final class AppSink: Element, @unchecked Sendable {
  var appSinkPointer: UnsafeMutablePointer<GstAppSink> { rawPointer.assumingMemoryBound(to: GstAppSink.self) }

  /// A new `appsink` element.
  /// - Throws: ``GStreamerError/elementNotFound(factory:package:)`` when gst-plugins-base is missing.
  public static func make(name: String? = nil) throws(GStreamerError) -> AppSink {
    try Element.make("appsink", name: name, as: AppSink.self)
  }

  /// The caps the sink accepts, nil for any.
  public var caps: Caps? {
    get { gst_app_sink_get_caps(appSinkPointer).map { Caps(adopting: $0) } }
    set { Caps.withPointer(newValue) { gst_app_sink_set_caps(appSinkPointer, $0) } }
  }

  /// The most buffers the sink queues for the application; 0 means no limit.
  public var maxBuffers: UInt32 {
    get { gst_app_sink_get_max_buffers(appSinkPointer) }
    set { gst_app_sink_set_max_buffers(appSinkPointer, newValue) }
  }

  /// Whether a full queue drops its oldest buffer (true) or blocks the pipeline (false).
  public var drop: Bool {
    get { gst_app_sink_get_drop(appSinkPointer) != 0 }
    set { gst_app_sink_set_drop(appSinkPointer, newValue ? 1 : 0) }
  }

  /// Whether buffers are delivered on the clock (true, the default) or as soon as they arrive.
  public var sync: Bool {
    get { (try? get("sync", as: Bool.self)) ?? true }
    set { try? set("sync", newValue) }
  }

  /// Whether the sink has received end of stream.
  public var isEndOfStream: Bool { gst_app_sink_is_eos(appSinkPointer) != 0 }

  /// Waits up to `timeout` for the next sample; nil at end of stream or on timeout.
  ///
  /// The corresponding C function is `gst_app_sink_try_pull_sample`.
  public func pullSample(timeout: Duration) -> Sample? {
    gst_app_sink_try_pull_sample(appSinkPointer, ClockTime(timeout).rawValue).map { Sample(adopting: $0) }
  }

  /// Calls `newSample` on the streaming thread for every sample, at once (no queue, no hop), and
  /// `endOfStream` when the stream ends. Replaces earlier callbacks and ``samples(bufferingPolicy:)`` streams.
  ///
  /// The corresponding C function is `gst_app_sink_set_callbacks`.
  public func setCallbacks(
    newSample: @escaping @Sendable (Sample) -> Void, endOfStream: (@Sendable () -> Void)? = nil
  ) {
    var callbacks = GstAppSinkCallbacks()
    callbacks.new_sample = Trampolines.appSinkNewSample
    callbacks.eos = Trampolines.appSinkEndOfStream
    let box = Unmanaged.passRetained(AppSinkCallbacks(newSample: newSample, endOfStream: endOfStream)).toOpaque()
    gst_app_sink_set_callbacks(appSinkPointer, &callbacks, box, Trampolines.releaseAppSinkCallbacks)
  }

  /// The sink's samples as a stream, which finishes at end of stream (or when the sink is destroyed).
  /// Replaces earlier callbacks and streams.
  /// - Parameter bufferingPolicy: what the stream keeps while the consumer is behind; set ``maxBuffers``
  ///   and ``drop`` for the sink's own queue.
  public func samples(
    bufferingPolicy: AsyncStream<Sample>.Continuation.BufferingPolicy = .unbounded
  ) -> AsyncStream<Sample> {
    let (stream, continuation) = AsyncStream.makeStream(of: Sample.self, bufferingPolicy: bufferingPolicy)
    let finish = FinishOnRelease(continuation)
    setCallbacks(
      newSample: { finish.continuation.yield($0) },
      endOfStream: { finish.continuation.finish() })
    return stream
  }
}

/// Finishes a stream when the callbacks that feed it are released (replaced, or the sink destroyed).
final class FinishOnRelease: Sendable {
  let continuation: AsyncStream<Sample>.Continuation
  init(_ continuation: AsyncStream<Sample>.Continuation) { self.continuation = continuation }
  deinit { continuation.finish() }
}

/// The Swift side of an appsink's callbacks.
final class AppSinkCallbacks: Sendable {
  let newSample: @Sendable (Sample) -> Void
  let endOfStream: (@Sendable () -> Void)?
  init(newSample: @escaping @Sendable (Sample) -> Void, endOfStream: (@Sendable () -> Void)?) {
    self.newSample = newSample
    self.endOfStream = endOfStream
  }
}

extension Trampolines {
  static let appSinkNewSample: @convention(c) (UnsafeMutablePointer<GstAppSink>?, gpointer?) -> GstFlowReturn = {
    sink, userData in
    guard let sample = gst_app_sink_pull_sample(sink) else { return GST_FLOW_EOS }
    Unmanaged<AppSinkCallbacks>.fromOpaque(userData!).takeUnretainedValue().newSample(Sample(adopting: sample))
    return GST_FLOW_OK
  }

  static let appSinkEndOfStream: @convention(c) (UnsafeMutablePointer<GstAppSink>?, gpointer?) -> Void = {
    _, userData in
    Unmanaged<AppSinkCallbacks>.fromOpaque(userData!).takeUnretainedValue().endOfStream?()
  }

  static let releaseAppSinkCallbacks: GDestroyNotify = { userData in
    Unmanaged<AppSinkCallbacks>.fromOpaque(userData!).release()
  }
}

internal import CGStreamer
import Dispatch

/// A GStreamer element: a source, filter, encoder, sink… made by factory name.
///
/// The corresponding C type is `GstElement`.
public class Element: Object, @unchecked Sendable {
  /// An element's state.
  ///
  /// The corresponding C type is `GstState`.
  public enum State: Int32, Sendable, Hashable, CustomStringConvertible {
    /// No pending state (only as a pending state).
    case voidPending = 0
    /// Initial state: no resources held.
    case null = 1
    /// Resources allocated, no data flow.
    case ready = 2
    /// Data flows up to the sinks, which hold the first buffer (prerolled).
    case paused = 3
    /// Data flows and the clock runs.
    case playing = 4

    init(_ state: GstState) { self = State(rawValue: Int32(state.rawValue)) ?? .voidPending }
    var gstState: GstState { GstState(rawValue: numericCast(rawValue)) }

    /// GStreamer's name of the state, such as `PLAYING`.
    public var description: String { String(cString: gst_element_state_get_name(gstState)) }
  }

  /// How a successful state change went.
  ///
  /// The corresponding C type is `GstStateChangeReturn` (its success values).
  public enum StateChange: Sendable, Hashable {
    /// The change completed.
    case success
    /// The change goes on in the background (sinks are prerolling).
    case async
    /// The change completed, and the element cannot preroll in paused (a live source).
    case noPreroll
  }

  /// Makes an element by factory name, as the most specific wrapper (an ``AppSrc`` for `appsrc`).
  ///
  /// The corresponding C function is `gst_element_factory_make`.
  /// - Parameters:
  ///   - factory: the factory name, such as `vp8enc`.
  ///   - name: a name unique in its bin; GStreamer chooses one when nil.
  /// - Throws: ``GStreamerError/elementNotFound(factory:package:)``, naming the Debian package that provides it.
  public static func make(_ factory: String, name: String? = nil) throws(GStreamerError) -> Element {
    Gst.ensureInitialized()
    guard let pointer = gst_element_factory_make(factory, name) else {
      throw .elementNotFound(factory: factory, package: PluginPackages.package(providing: factory))
    }
    // The element comes back floating; wrapping sinks it.
    return Object.wrap(retaining: UnsafeMutableRawPointer(pointer)) as! Element
  }

  /// Makes an element of a known wrapper type, such as `try Element.make("appsink", as: AppSink.self)`.
  /// - Throws: ``GStreamerError/elementNotFound(factory:package:)``, or
  ///   ``GStreamerError/wrongElementType(element:expected:actual:)`` when the factory makes another kind.
  public static func make<T: Element>(_ factory: String, name: String? = nil, as type: T.Type) throws(GStreamerError)
    -> T
  {
    let element = try make(factory, name: name)
    guard let typed = element as? T else {
      throw .wrongElementType(element: element.name, expected: "\(T.self)", actual: element.typeName)
    }
    return typed
  }

  var elementPointer: UnsafeMutablePointer<GstElement> { rawPointer.assumingMemoryBound(to: GstElement.self) }

  /// The name of the factory that made the element, such as `videotestsrc`.
  public var factoryName: String? {
    guard let factory = gst_element_get_factory(elementPointer),
      let name = gst_object_get_name(
        UnsafeMutableRawPointer(factory).assumingMemoryBound(to: GstObject.self))
    else { return nil }
    defer { g_free(name) }
    return String(cString: name)
  }

  // MARK: - State

  /// Asks the element to change state.
  ///
  /// Setting a pipeline to null from one of its own streaming threads deadlocks (GStreamer joins
  /// them): use ``Pipeline/stop(whenStopped:)`` there.
  /// The corresponding C function is `gst_element_set_state`.
  /// - Returns: how the change went: done, or still going on (`.async`), or done without preroll.
  /// - Throws: ``GStreamerError/stateChangeFailed(element:target:error:)`` with the error the element
  ///   posted on its pipeline's bus, when it posted one.
  @discardableResult
  public func setState(_ state: State) throws(GStreamerError) -> StateChange {
    let errors = pipelineErrorLog()
    let mark = errors?.mark()
    let result = gst_element_set_state(elementPointer, state.gstState)
    if state == .null && self is Pipeline { Pipeline.stopped(elementPointer) }
    switch result {
    case GST_STATE_CHANGE_SUCCESS: return .success
    case GST_STATE_CHANGE_ASYNC: return .async
    case GST_STATE_CHANGE_NO_PREROLL: return .noPreroll
    default:
      throw .stateChangeFailed(element: name, target: state, error: errors?.firstError(since: mark))
    }
  }

  /// The current and pending state, waiting up to `timeout` for a change under way to finish.
  ///
  /// The corresponding C function is `gst_element_get_state`.
  /// - Throws: ``GStreamerError/stateChangeFailed(element:target:error:)`` when the last change failed.
  public func state(waitingUpTo timeout: Duration = .zero) throws(GStreamerError) -> (
    current: State, pending: State
  ) {
    var current = GST_STATE_VOID_PENDING
    var pending = GST_STATE_VOID_PENDING
    let errors = pipelineErrorLog()
    let result = gst_element_get_state(elementPointer, &current, &pending, ClockTime(timeout).rawValue)
    if result == GST_STATE_CHANGE_FAILURE {
      throw .stateChangeFailed(element: name, target: State(pending), error: errors?.lastError)
    }
    return (State(current), State(pending))
  }

  /// The state the element is in now, not waiting for a change under way (`GST_STATE`); an
  /// element is `.playing` only once its base time is set, so its running time is valid.
  public var currentState: State {
    var current = GST_STATE_VOID_PENDING
    _ = gst_element_get_state(elementPointer, &current, nil, 0)
    return State(current)
  }

  /// Changes state and waits until the change has completed (sinks prerolled), up to `timeout`.
  ///
  /// The wait happens on a GStreamer-free dispatch queue, never on the cooperative thread pool.
  /// - Throws: ``GStreamerError/stateChangeFailed(element:target:error:)`` or
  ///   ``GStreamerError/stateChangeTimedOut(element:target:timeout:)``.
  public func changeState(to state: State, timeout: Duration = .seconds(10)) async throws(GStreamerError) {
    let result: Result<Void, GStreamerError> = await withCheckedContinuation { continuation in
      Element.stateQueue.async {
        continuation.resume(
          returning: Result { () throws(GStreamerError) in try self.changeStateBlocking(to: state, timeout: timeout) })
      }
    }
    try result.get()
  }

  /// Brings the element to its parent's state: for an element added to a playing pipeline
  /// (in a `pad-added` handler, say). Returns whether it could.
  ///
  /// The corresponding C function is `gst_element_sync_state_with_parent`.
  @discardableResult public func syncStateWithParent() -> Bool {
    gst_element_sync_state_with_parent(elementPointer) != 0
  }

  /// The blocking form of ``changeState(to:timeout:)``, for code that is not async.
  public func changeStateBlocking(to state: State, timeout: Duration = .seconds(10)) throws(GStreamerError) {
    let errors = pipelineErrorLog()
    let mark = errors?.mark()
    guard try setState(state) == .async else { return }
    var current = GST_STATE_VOID_PENDING
    var pending = GST_STATE_VOID_PENDING
    switch gst_element_get_state(elementPointer, &current, &pending, ClockTime(timeout).rawValue) {
    case GST_STATE_CHANGE_FAILURE:
      throw .stateChangeFailed(element: name, target: state, error: errors?.firstError(since: mark))
    case GST_STATE_CHANGE_ASYNC:
      throw .stateChangeTimedOut(element: name, target: state, timeout: timeout)
    default:
      return
    }
  }

  /// Where blocking state waits run for ``changeState(to:timeout:)``.
  static let stateQueue = DispatchQueue(label: "revue.gstreamer.state", attributes: .concurrent)

  /// The error log of the pipeline this element belongs to, if it is in one.
  func pipelineErrorLog() -> BusDispatcher? {
    var top = UnsafeMutableRawPointer(elementPointer)
    gst_object_ref(top)
    while let parent = gst_object_get_parent(top.assumingMemoryBound(to: GstObject.self)) {
      gst_object_unref(top)
      top = UnsafeMutableRawPointer(parent)
    }
    defer { gst_object_unref(top) }
    guard g_type_is_a(cgst_instance_type(top), cgst_type_pipeline()) != 0,
      let bus = gst_element_get_bus(top.assumingMemoryBound(to: GstElement.self))
    else { return nil }
    defer { gst_object_unref(UnsafeMutableRawPointer(bus)) }
    return BusDispatcher.existing(on: bus)
  }

  // MARK: - Links

  /// Links this element's source pads to `sink`'s sink pads, choosing compatible pads (requesting them if needed).
  ///
  /// The corresponding C functions are `gst_element_link` and `gst_element_link_filtered`.
  /// - Parameters:
  ///   - sink: the element to link to.
  ///   - filter: caps the link must satisfy, as a capsfilter between the two would.
  /// - Returns: `sink`, so that links chain: `try a.link(b).link(c)`.
  /// - Throws: ``GStreamerError/linkFailed(source:sink:reason:)``.
  @discardableResult
  public func link(_ sink: Element, filter: Caps? = nil) throws(GStreamerError) -> Element {
    let linked: gboolean
    if let filter {
      linked = filter.withPointer { gst_element_link_filtered(elementPointer, sink.elementPointer, $0) }
    } else {
      linked = gst_element_link(elementPointer, sink.elementPointer)
    }
    guard linked != 0 else {
      throw .linkFailed(source: name, sink: sink.name, reason: linkFailureReason(to: sink, filter: filter))
    }
    return sink
  }

  /// Why two elements could not be linked, in terms a user can act on.
  private func linkFailureReason(to sink: Element, filter: Caps?) -> String {
    let sourceParent = gst_object_get_parent(objectPointer)
    let sinkParent = gst_object_get_parent(sink.objectPointer)
    defer {
      sourceParent.map { gst_object_unref(UnsafeMutableRawPointer($0)) }
      sinkParent.map { gst_object_unref(UnsafeMutableRawPointer($0)) }
    }
    if sourceParent == nil || sourceParent != sinkParent {
      return "both elements must be in the same bin (\(sourceParent == nil ? name : sink.name) is not)"
    }
    let sourceCaps = pads.filter { $0.direction == .source }.map { $0.queryCaps() }
    let sinkCaps = sink.pads.filter { $0.direction == .sink }.map { $0.queryCaps() }
    if sourceCaps.isEmpty && sink.padTemplates(direction: .source).isEmpty == false {
      return "\(name) has no free source pad"
    }
    let described = { (caps: [Caps]) in caps.map(\.description).joined(separator: "; ") }
    return
      "no common format: \(name) produces \(described(sourceCaps).isEmpty ? "nothing yet" : described(sourceCaps)), "
      + "\(sink.name) accepts \(described(sinkCaps).isEmpty ? "nothing" : described(sinkCaps))"
      + (filter.map { ", filter \($0)" } ?? "")
  }

  /// Unlinks this element from `sink`.
  ///
  /// The corresponding C function is `gst_element_unlink`.
  public func unlink(_ sink: Element) { gst_element_unlink(elementPointer, sink.elementPointer) }

  // MARK: - Pads

  /// The pad that always exists under this name (such as `src` or `sink`), or nil.
  ///
  /// The corresponding C function is `gst_element_get_static_pad`.
  public func staticPad(_ name: String) -> Pad? {
    gst_element_get_static_pad(elementPointer, name).map { Pad(adopting: UnsafeMutableRawPointer($0)) }
  }

  /// Requests a pad from a request template such as `sink_%u` or `send_rtp_sink_0`.
  ///
  /// The corresponding C function is `gst_element_request_pad_simple`.
  /// - Throws: ``GStreamerError/noSuchPad(element:pad:)``.
  public func requestPad(_ name: String) throws(GStreamerError) -> Pad {
    guard let pad = gst_element_request_pad_simple(elementPointer, name) else {
      throw .noSuchPad(element: self.name, pad: name)
    }
    return Pad(adopting: UnsafeMutableRawPointer(pad))
  }

  /// Releases a pad obtained with ``requestPad(_:)``.
  public func releaseRequestPad(_ pad: Pad) { gst_element_release_request_pad(elementPointer, pad.padPointer) }

  /// Every pad the element has now.
  public var pads: [Pad] {
    var result: [Pad] = []
    let iterator = gst_element_iterate_pads(elementPointer)
    defer { gst_iterator_free(iterator) }
    var item = GValue()
    while gst_iterator_next(iterator, &item) == GST_ITERATOR_OK {
      if let pad = g_value_get_object(&item) { result.append(Pad(retaining: pad)) }
      g_value_reset(&item)
    }
    g_value_unset(&item)
    return result
  }

  /// The names of the element's pad templates in one direction.
  func padTemplates(direction: Pad.Direction) -> [String] {
    let elementClass = UnsafeMutableRawPointer(
      rawPointer.assumingMemoryBound(to: GTypeInstance.self).pointee.g_class
    ).assumingMemoryBound(to: GstElementClass.self)
    var names: [String] = []
    var node = gst_element_class_get_pad_template_list(elementClass)
    while let current = node {
      let template = current.pointee.data.assumingMemoryBound(to: GstPadTemplate.self)
      if Pad.Direction(template.pointee.direction) == direction {
        names.append(String(cString: template.pointee.name_template))
      }
      node = current.pointee.next
    }
    return names
  }

  // MARK: - Events, messages and queries

  /// Sends end-of-stream into the element (to a pipeline: into every source), so that it drains and posts EOS.
  ///
  /// The corresponding C function is `gst_element_send_event` with `gst_event_new_eos`.
  /// - Returns: whether the event was handled.
  @discardableResult
  public func sendEndOfStream() -> Bool { gst_element_send_event(elementPointer, gst_event_new_eos()) != 0 }

  /// Posts an error message from this element, as `GST_ELEMENT_ERROR` does in C.
  public func postError(_ message: String, debug: String? = nil) {
    cgst_element_post_message(elementPointer, GST_MESSAGE_ERROR, message, debug)
  }

  /// Posts a warning message from this element, as `GST_ELEMENT_WARNING` does in C.
  public func postWarning(_ message: String, debug: String? = nil) {
    cgst_element_post_message(elementPointer, GST_MESSAGE_WARNING, message, debug)
  }

  /// The stream position, or nil when the element cannot say yet.
  ///
  /// The corresponding C function is `gst_element_query_position` (in time).
  public var position: ClockTime? {
    var position: gint64 = 0
    guard gst_element_query_position(elementPointer, GST_FORMAT_TIME, &position) != 0, position >= 0 else { return nil }
    return ClockTime(nanoseconds: UInt64(position))
  }

  /// The stream duration, or nil when it is unknown (a live stream).
  ///
  /// The corresponding C function is `gst_element_query_duration` (in time).
  public var duration: ClockTime? {
    var duration: gint64 = 0
    guard gst_element_query_duration(elementPointer, GST_FORMAT_TIME, &duration) != 0, duration >= 0 else { return nil }
    return ClockTime(nanoseconds: UInt64(duration))
  }

  /// The result of a latency query.
  public struct Latency: Sendable, Hashable {
    /// Whether the pipeline is live.
    public var isLive: Bool
    /// The minimum latency.
    public var minimum: ClockTime
    /// The maximum latency, nil when unbounded.
    public var maximum: ClockTime?
  }

  /// Queries the latency (meaningful once playing).
  ///
  /// The corresponding C functions are `gst_query_new_latency` and `gst_element_query`.
  /// - Throws: ``GStreamerError/queryFailed(element:query:)`` when nothing answered.
  public func queryLatency() throws(GStreamerError) -> Latency {
    let query = gst_query_new_latency()!
    defer { gst_query_unref(query) }
    guard gst_element_query(elementPointer, query) != 0 else { throw .queryFailed(element: name, query: "latency") }
    var live: gboolean = 0
    var minimum: GstClockTime = 0
    var maximum: GstClockTime = 0
    gst_query_parse_latency(query, &live, &minimum, &maximum)
    return Latency(
      isLive: live != 0, minimum: ClockTime(nanoseconds: UInt64(minimum)), maximum: ClockTime.from(maximum))
  }
}

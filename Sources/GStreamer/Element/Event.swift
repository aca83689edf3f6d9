internal import CGStreamer

/// An event that travels with the data: the stream's start, its caps, its segment, its end.
///
/// The corresponding C type is `GstEvent`.
public struct Event: Sendable {
  /// Owns one reference to the event.
  // Safety: events are immutable once made and their reference counting is atomic.
  final class Storage: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<GstEvent>
    init(adopting pointer: UnsafeMutablePointer<GstEvent>) { self.pointer = pointer }
    deinit { gst_event_unref(pointer) }
  }

  private let storage: Storage

  private init(adopting pointer: UnsafeMutablePointer<GstEvent>) { storage = Storage(adopting: pointer) }

  /// Takes a reference of its own to `pointer` (for events a probe sees).
  init(retaining pointer: UnsafeMutablePointer<GstEvent>) { storage = Storage(adopting: gst_event_ref(pointer)) }

  /// The address of the event, to tell whether a probe's handler replaced it.
  var pointer: UnsafeMutablePointer<GstEvent> { storage.pointer }

  /// A new reference, for C calls that take ownership.
  func newReference() -> UnsafeMutablePointer<GstEvent> { gst_event_ref(storage.pointer) }

  /// The start of a stream, with its id (unique per stream).
  ///
  /// The corresponding C function is `gst_event_new_stream_start`.
  public static func streamStart(id: String) -> Event {
    Gst.ensureInitialized()
    return Event(adopting: gst_event_new_stream_start(id))
  }

  /// The format of the buffers that follow.
  ///
  /// The corresponding C function is `gst_event_new_caps`.
  public static func caps(_ caps: Caps) -> Event {
    caps.withPointer { Event(adopting: gst_event_new_caps($0)) }
  }

  /// A time segment starting at 0: buffer timestamps are running time.
  ///
  /// The corresponding C functions are `gst_segment_init` and `gst_event_new_segment`.
  public static var timeSegment: Event {
    Gst.ensureInitialized()
    var segment = GstSegment()
    gst_segment_init(&segment, GST_FORMAT_TIME)
    return Event(adopting: gst_event_new_segment(&segment))
  }

  /// The end of the stream.
  ///
  /// The corresponding C function is `gst_event_new_eos`.
  public static var endOfStream: Event {
    Gst.ensureInitialized()
    return Event(adopting: gst_event_new_eos())
  }

  /// An application event that travels upstream, such as `GstForceKeyUnit` (a request for a
  /// keyframe) with its fields.
  ///
  /// The corresponding C function is `gst_event_new_custom` with `GST_EVENT_CUSTOM_UPSTREAM`.
  public static func customUpstream(_ structure: Structure) -> Event {
    Gst.ensureInitialized()
    let copy = structure.withPointer { gst_structure_copy($0)! }
    return Event(adopting: gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM, copy))
  }

  /// The event's fields (for custom events, their name says what the event is), or nil.
  ///
  /// The corresponding C function is `gst_event_get_structure`.
  public var structure: Structure? { gst_event_get_structure(storage.pointer).map { Structure(copying: $0) } }

  /// The caps a `caps` event carries; nil for other events.
  ///
  /// The corresponding C function is `gst_event_parse_caps`.
  public var caps: Caps? {
    guard storage.pointer.pointee.type == GST_EVENT_CAPS else { return nil }
    var caps: UnsafeMutablePointer<GstCaps>?
    gst_event_parse_caps(storage.pointer, &caps)
    return caps.map { Caps(retaining: $0) }
  }

  /// GStreamer's name of the event type, such as `caps`.
  public var typeName: String { String(cString: gst_event_type_get_name(storage.pointer.pointee.type)) }
}

extension Pad {
  /// A source pad of no element, through which Swift code pushes buffers synchronously into the
  /// elements linked after it, on the calling thread, as GStreamer's test harness does.
  ///
  /// The corresponding C functions are `gst_pad_new` and `gst_pad_set_active`.
  public static func makeSource(name: String) -> Pad {
    Gst.ensureInitialized()
    let pad = Pad(retaining: UnsafeMutableRawPointer(gst_pad_new(name, GST_PAD_SRC)))
    _ = gst_pad_set_active(pad.padPointer, 1)
    return pad
  }

  /// Pushes a buffer to the peer, which processes it before this returns.
  ///
  /// The corresponding C function is `gst_pad_push`.
  /// - Throws: the ``FlowError`` the elements downstream returned.
  public func push(_ buffer: consuming Buffer) throws(FlowError) {
    if let error = FlowError(gst_pad_push(padPointer, buffer.take())) { throw error }
  }

  /// Sends an event downstream (stream start, caps and segment before the first buffer).
  ///
  /// The corresponding C function is `gst_pad_push_event`.
  /// - Returns: whether the peer accepted it.
  @discardableResult
  public func push(event: Event) -> Bool { gst_pad_push_event(padPointer, event.newReference()) != 0 }

  /// Hands an event to this pad as if its peer had pushed it: an upstream event sent to a source
  /// pad reaches the pad's probes, then its element (a keyframe request a downstream element
  /// would make, sent where that element would send it).
  ///
  /// The corresponding C function is `gst_pad_send_event`.
  /// - Returns: whether the pad's element accepted it.
  @discardableResult
  public func send(event: Event) -> Bool { gst_pad_send_event(padPointer, event.newReference()) != 0 }
}

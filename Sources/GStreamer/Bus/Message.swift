internal import CGStreamer

/// A message posted on a bus: an error, end of stream, a state change, an element's own message…
///
/// The corresponding C type is `GstMessage`.
public struct Message: Sendable, CustomStringConvertible {
  /// Owns one reference to the message.
  // Safety: messages are immutable once posted and their reference counting is atomic.
  final class Storage: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<GstMessage>
    init(adopting pointer: UnsafeMutablePointer<GstMessage>) { self.pointer = pointer }
    deinit { gst_message_unref(pointer) }
  }

  private let storage: Storage

  /// Takes a reference of its own to a borrowed message.
  init(retaining pointer: UnsafeMutablePointer<GstMessage>) { storage = Storage(adopting: gst_message_ref(pointer)) }

  /// Adopts a message reference (transfer full).
  init(adopting pointer: UnsafeMutablePointer<GstMessage>) { storage = Storage(adopting: pointer) }

  var pointer: UnsafeMutablePointer<GstMessage> { storage.pointer }

  /// Kinds of message, to filter a bus stream by.
  ///
  /// The corresponding C type is `GstMessageType`.
  public struct Types: OptionSet, Sendable, Hashable {
    /// The `GstMessageType` bits.
    public let rawValue: UInt32
    /// Types from `GstMessageType` bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    init(_ type: GstMessageType) { rawValue = UInt32(bitPattern: type.rawValue) }

    /// End of stream.
    public static let eos = Types(GST_MESSAGE_EOS)
    /// An error.
    public static let error = Types(GST_MESSAGE_ERROR)
    /// A warning.
    public static let warning = Types(GST_MESSAGE_WARNING)
    /// Information.
    public static let info = Types(GST_MESSAGE_INFO)
    /// A state change of any element.
    public static let stateChanged = Types(GST_MESSAGE_STATE_CHANGED)
    /// An element-specific message.
    public static let element = Types(GST_MESSAGE_ELEMENT)
    /// An application message.
    public static let application = Types(GST_MESSAGE_APPLICATION)
    /// An asynchronous state change finished.
    public static let asyncDone = Types(GST_MESSAGE_ASYNC_DONE)
    /// The latency changed.
    public static let latency = Types(GST_MESSAGE_LATENCY)
    /// A stream started.
    public static let streamStart = Types(GST_MESSAGE_STREAM_START)
    /// Buffering progress.
    public static let buffering = Types(GST_MESSAGE_BUFFERING)
    /// Quality of service: buffers dropped for lateness.
    public static let qos = Types(GST_MESSAGE_QOS)
    /// A device appeared (device monitor buses).
    public static let deviceAdded = Types(GST_MESSAGE_DEVICE_ADDED)
    /// A device went away (device monitor buses).
    public static let deviceRemoved = Types(GST_MESSAGE_DEVICE_REMOVED)
    /// A device changed (device monitor buses).
    public static let deviceChanged = Types(GST_MESSAGE_DEVICE_CHANGED)
    /// Every kind.
    public static let all = Types(rawValue: UInt32.max)
  }

  /// What the message says, with its payload.
  public enum Kind: Sendable {
    /// End of stream reached every sink.
    case eos
    /// An element failed.
    case error(BusError)
    /// An element warns.
    case warning(BusError)
    /// An element informs.
    case info(BusError)
    /// An element changed state.
    case stateChanged(old: Element.State, new: Element.State, pending: Element.State)
    /// An asynchronous state change completed.
    case asyncDone
    /// A new stream started.
    case streamStart
    /// Latency changed: the pipeline should recompute it.
    case latency
    /// Buffering progress in percent.
    case buffering(percent: Int)
    /// An element-specific message and its structure.
    case element(Structure?)
    /// An application message and its structure.
    case application(Structure?)
    /// A device was added.
    case deviceAdded(Device)
    /// A device was removed.
    case deviceRemoved(Device)
    /// A device changed: the new and the old description.
    case deviceChanged(Device, old: Device)
    /// Another kind, by GStreamer's name (`qos`, `new-clock`…).
    case other(String)
  }

  /// The message's type bit.
  public var type: Types { Types(pointer.pointee.type) }

  /// GStreamer's name of the type, such as `state-changed`.
  public var typeName: String { String(cString: gst_message_type_get_name(pointer.pointee.type)) }

  /// The object that posted it.
  public var source: Object? { pointer.pointee.src.map { Object.wrap(retaining: UnsafeMutableRawPointer($0)) } }

  /// The path of the object that posted it, such as `/GstPipeline:pipeline0/GstFakeSrc:src`.
  public var sourcePath: String {
    guard let source = pointer.pointee.src, let text = gst_object_get_path_string(source) else { return "" }
    defer { g_free(text) }
    return String(cString: text)
  }

  /// The message's structure, if it has one.
  public var structure: Structure? { gst_message_get_structure(pointer).map { Structure(copying: $0) } }

  /// The payload, parsed by type.
  public var kind: Kind {
    let messageType = pointer.pointee.type
    switch messageType {
    case GST_MESSAGE_EOS: return .eos
    case GST_MESSAGE_ERROR: return .error(parseError(gst_message_parse_error))
    case GST_MESSAGE_WARNING: return .warning(parseError(gst_message_parse_warning))
    case GST_MESSAGE_INFO: return .info(parseError(gst_message_parse_info))
    case GST_MESSAGE_STATE_CHANGED:
      var old = GST_STATE_VOID_PENDING
      var new = GST_STATE_VOID_PENDING
      var pending = GST_STATE_VOID_PENDING
      gst_message_parse_state_changed(pointer, &old, &new, &pending)
      return .stateChanged(old: .init(old), new: .init(new), pending: .init(pending))
    case GST_MESSAGE_ASYNC_DONE: return .asyncDone
    case GST_MESSAGE_STREAM_START: return .streamStart
    case GST_MESSAGE_LATENCY: return .latency
    case GST_MESSAGE_BUFFERING:
      var percent: gint = 0
      gst_message_parse_buffering(pointer, &percent)
      return .buffering(percent: Int(percent))
    case GST_MESSAGE_ELEMENT: return .element(structure)
    case GST_MESSAGE_APPLICATION: return .application(structure)
    case GST_MESSAGE_DEVICE_ADDED, GST_MESSAGE_DEVICE_REMOVED:
      var device: UnsafeMutablePointer<GstDevice>?
      if messageType == GST_MESSAGE_DEVICE_ADDED {
        gst_message_parse_device_added(pointer, &device)
      } else {
        gst_message_parse_device_removed(pointer, &device)
      }
      guard let device else { return .other(typeName) }
      let wrapped = Device(adopting: UnsafeMutableRawPointer(device))
      return messageType == GST_MESSAGE_DEVICE_ADDED ? .deviceAdded(wrapped) : .deviceRemoved(wrapped)
    case GST_MESSAGE_DEVICE_CHANGED:
      var device: UnsafeMutablePointer<GstDevice>?
      var old: UnsafeMutablePointer<GstDevice>?
      gst_message_parse_device_changed(pointer, &device, &old)
      guard let device, let old else { return .other(typeName) }
      return .deviceChanged(
        Device(adopting: UnsafeMutableRawPointer(device)), old: Device(adopting: UnsafeMutableRawPointer(old)))
    default:
      return .other(typeName)
    }
  }

  private typealias ErrorParser = (
    UnsafeMutablePointer<GstMessage>?, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>?,
    UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
  ) -> Void

  private func parseError(_ parse: ErrorParser) -> BusError {
    var error: UnsafeMutablePointer<GError>?
    var debug: UnsafeMutablePointer<gchar>?
    parse(pointer, &error, &debug)
    defer { g_free(debug) }
    return BusError(
      source: sourcePath,
      error: error.map(GLibError.init(consuming:)) ?? GLibError(domain: "", code: 0, message: "(no message)"),
      debug: debug.map { String(cString: $0) })
  }

  /// The type and source, and the error text for errors and warnings.
  public var description: String {
    switch kind {
    case .error(let error), .warning(let error), .info(let error): "\(typeName): \(error)"
    case .stateChanged(let old, let new, _): "\(typeName) \(sourcePath): \(old) -> \(new)"
    default: "\(typeName) from \(sourcePath)"
    }
  }

  /// An application message carrying `structure`, to post with ``Bus/post(_:)``.
  ///
  /// The corresponding C function is `gst_message_new_application`.
  public static func application(_ structure: Structure, from source: Object? = nil) -> Message {
    Message(adopting: gst_message_new_application(source?.objectPointer, structure.newCopy()))
  }
}

internal import CGStreamer

// MARK: - GLibError

/// An error reported by GLib or GStreamer as a `GError`: its domain, code and message.
///
/// The corresponding C type is `GError`.
public struct GLibError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The error domain, such as `gst-resource-error-quark` or `gst_parse_error`.
  public var domain: String
  /// The code within the domain.
  public var code: Int32
  /// The human-readable message GStreamer gave.
  public var message: String

  /// Creates an error from its parts.
  public init(domain: String, code: Int32, message: String) {
    self.domain = domain
    self.code = code
    self.message = message
  }

  /// Takes a `GError*` and frees it.
  init(consuming error: UnsafeMutablePointer<GError>) {
    domain = String(cString: g_quark_to_string(error.pointee.domain))
    code = error.pointee.code
    message = error.pointee.message.map { String(cString: $0) } ?? ""
    g_error_free(error)
  }

  /// The message and, in parentheses, the domain and code.
  public var description: String { "\(message) (\(domain) \(code))" }
}

// MARK: - BusError

/// An error or warning message posted on a bus: which element posted it, and GStreamer's own texts.
public struct BusError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The path of the element that posted it, such as `/GstPipeline:pipeline0/GstFileSrc:src`.
  public var source: String
  /// GStreamer's error.
  public var error: GLibError
  /// The debug string, naming the source file and function, when the element gave one.
  public var debug: String?

  /// Creates a bus error from its parts.
  public init(source: String, error: GLibError, debug: String? = nil) {
    self.source = source
    self.error = error
    self.debug = debug
  }

  /// `source: message`, followed by the debug string when there is one.
  public var description: String {
    var text = "\(source): \(error.message)"
    if let debug, !debug.isEmpty { text += " [\(debug)]" }
    return text
  }
}

// MARK: - FlowError

/// Why a buffer could not be pushed downstream.
///
/// The corresponding C type is `GstFlowReturn` (its error values).
public enum FlowError: Error, Sendable, Hashable, CustomStringConvertible {
  /// Downstream is flushing (for example, the pipeline is stopping): `GST_FLOW_FLUSHING`.
  case flushing
  /// The pad is not linked: `GST_FLOW_NOT_LINKED`.
  case notLinked
  /// The stream has ended: `GST_FLOW_EOS`.
  case eos
  /// Downstream does not accept the format: `GST_FLOW_NOT_NEGOTIATED`.
  case notNegotiated
  /// A fatal error occurred downstream: `GST_FLOW_ERROR`.
  case error
  /// The operation is not supported: `GST_FLOW_NOT_SUPPORTED`.
  case notSupported
  /// Any other value.
  case other(Int32)

  /// Converts a `GstFlowReturn`; nil for success values.
  init?(_ flow: GstFlowReturn) {
    switch flow {
    case GST_FLOW_OK, GST_FLOW_CUSTOM_SUCCESS, GST_FLOW_CUSTOM_SUCCESS_1, GST_FLOW_CUSTOM_SUCCESS_2:
      return nil
    case GST_FLOW_FLUSHING: self = .flushing
    case GST_FLOW_NOT_LINKED: self = .notLinked
    case GST_FLOW_EOS: self = .eos
    case GST_FLOW_NOT_NEGOTIATED: self = .notNegotiated
    case GST_FLOW_ERROR: self = .error
    case GST_FLOW_NOT_SUPPORTED: self = .notSupported
    default: self = .other(flow.rawValue)
    }
  }

  var flowReturn: GstFlowReturn {
    switch self {
    case .flushing: GST_FLOW_FLUSHING
    case .notLinked: GST_FLOW_NOT_LINKED
    case .eos: GST_FLOW_EOS
    case .notNegotiated: GST_FLOW_NOT_NEGOTIATED
    case .error: GST_FLOW_ERROR
    case .notSupported: GST_FLOW_NOT_SUPPORTED
    case .other(let value): GstFlowReturn(rawValue: value)
    }
  }

  /// GStreamer's name of the flow return, such as `not-negotiated`.
  public var description: String { String(cString: gst_flow_get_name(flowReturn)) }
}

// MARK: - GStreamerError

/// An error of the GStreamer Swift layer. Each case names what failed and carries GStreamer's own text.
public enum GStreamerError: Error, Sendable, Hashable, CustomStringConvertible {
  /// `gst_init_check` failed.
  case initializationFailed(GLibError)
  /// No element factory of that name is installed; `package` is the Debian package that provides it, when known.
  case elementNotFound(factory: String, package: String?)
  /// A gst-launch pipeline description could not be parsed: GStreamer's parse error.
  case parseFailed(description: String, error: GLibError)
  /// A caps or structure string could not be parsed.
  case capsParseFailed(String)
  /// The element has no property of that name.
  case noSuchProperty(element: String, property: String)
  /// The value given or asked for does not fit the property's type.
  case propertyTypeMismatch(element: String, property: String, expected: String, given: String)
  /// The value has the right type but is not allowed: out of range, or an unknown enum or flags nick.
  case invalidPropertyValue(element: String, property: String, value: String, reason: String)
  /// The property cannot be written (read-only, or construct-only after construction) or read.
  case propertyNotAccessible(element: String, property: String, reason: String)
  /// Two elements or pads could not be linked; `reason` is GStreamer's.
  case linkFailed(source: String, sink: String, reason: String)
  /// An element could not be added to or removed from a bin.
  case binOperationFailed(bin: String, element: String, reason: String)
  /// A state change failed; `error` is the error the element posted on the bus, when it posted one.
  case stateChangeFailed(element: String, target: Element.State, error: BusError?)
  /// A state change did not complete within the time allowed.
  case stateChangeTimedOut(element: String, target: Element.State, timeout: Duration)
  /// Something did not happen within the time allowed.
  case timedOut(String, after: Duration)
  /// No element with that name is in the bin.
  case noSuchElement(bin: String, name: String)
  /// An element of a different kind than asked for.
  case wrongElementType(element: String, expected: String, actual: String)
  /// A pad of that name does not exist and cannot be requested.
  case noSuchPad(element: String, pad: String)
  /// A buffer could not be pushed or pulled.
  case flow(FlowError)
  /// A pipeline posted an error on its bus.
  case bus(BusError)
  /// A buffer could not be mapped or did not have the expected size.
  case bufferAccess(String)
  /// A query or event was not answered.
  case queryFailed(element: String, query: String)
  /// A server could not listen on an address (in use, or not this host's); `reason` is GLib's.
  case listenFailed(address: String, reason: String)

  /// One line that says what failed, with GStreamer's text and, where it helps, what to do.
  public var description: String {
    switch self {
    case .initializationFailed(let error):
      return "GStreamer could not be initialized: \(error.message)"
    case .elementNotFound(let factory, let package):
      if let package {
        return "no GStreamer element '\(factory)': install the Debian package \(package) (apt-get install \(package))"
      }
      return "no GStreamer element '\(factory)': no installed plugin provides it (gst-inspect-1.0 \(factory))"
    case .parseFailed(let description, let error):
      return "cannot parse pipeline '\(description)': \(error.message)"
    case .capsParseFailed(let text):
      return "cannot parse caps '\(text)'"
    case .noSuchProperty(let element, let property):
      return "element '\(element)' has no property '\(property)'"
    case .propertyTypeMismatch(let element, let property, let expected, let given):
      return "property '\(property)' of element '\(element)' is of type \(expected), not \(given)"
    case .invalidPropertyValue(let element, let property, let value, let reason):
      return "invalid value \(value) for property '\(property)' of element '\(element)': \(reason)"
    case .propertyNotAccessible(let element, let property, let reason):
      return "property '\(property)' of element '\(element)' \(reason)"
    case .linkFailed(let source, let sink, let reason):
      return "cannot link '\(source)' to '\(sink)': \(reason)"
    case .binOperationFailed(let bin, let element, let reason):
      return "bin '\(bin)', element '\(element)': \(reason)"
    case .stateChangeFailed(let element, let target, let error):
      let base = "'\(element)' failed to change state to \(target)"
      if let error { return "\(base): \(error)" }
      return base
    case .stateChangeTimedOut(let element, let target, let timeout):
      return "'\(element)' did not reach state \(target) within \(timeout)"
    case .timedOut(let what, let timeout):
      return "timed out after \(timeout): \(what)"
    case .noSuchElement(let bin, let name):
      return "bin '\(bin)' has no element named '\(name)'"
    case .wrongElementType(let element, let expected, let actual):
      return "element '\(element)' is a \(actual), not a \(expected)"
    case .noSuchPad(let element, let pad):
      return "element '\(element)' has no pad '\(pad)'"
    case .flow(let error):
      return "data flow error: \(error)"
    case .bus(let error):
      return error.description
    case .bufferAccess(let reason):
      return "buffer: \(reason)"
    case .queryFailed(let element, let query):
      return "element '\(element)' did not answer the \(query) query"
    case .listenFailed(let address, let reason):
      return "cannot listen on \(address): \(reason)"
    }
  }
}

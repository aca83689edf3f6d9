/// A value of a GStreamer property or caps field, typed as GStreamer types it.
///
/// Reading a property or field gives the case of its type; writing converts to the type the
/// property or field expects, and a value that does not fit is an error, never a silent change.
/// The corresponding C type is `GValue`.
public indirect enum Value: Sendable, Equatable, CustomStringConvertible {
  /// `gboolean`.
  case bool(Bool)
  /// A signed integer of any width (`gint`, `glong`, `gint64`, `gchar`).
  case int(Int)
  /// An unsigned integer of any width (`guint`, `gulong`, `guint64`, `guchar`).
  case uint(UInt)
  /// `gdouble` or `gfloat`.
  case double(Double)
  /// A string.
  case string(String)
  /// No value: a NULL string, caps, structure or object.
  case null
  /// An enum value, by its nick (as gst-launch and `gst-inspect-1.0` write it).
  case enumeration(String)
  /// Flags, by their nicks.
  case flags([String])
  /// A fraction.
  case fraction(Fraction)
  /// An integer range `[min, max]` with a step (1 when any value is allowed).
  case intRange(min: Int32, max: Int32, step: Int32)
  /// A double range `[min, max]`.
  case doubleRange(min: Double, max: Double)
  /// A fraction range `[min, max]`.
  case fractionRange(min: Fraction, max: Fraction)
  /// A list of alternatives, `{ a, b }` in caps strings.
  case list([Value])
  /// An ordered array, `< a, b >` in caps strings.
  case array([Value])
  /// Caps.
  case caps(Caps)
  /// A structure.
  case structure(Structure)
  /// A GStreamer object (an element, a pad…).
  case object(Object)
  /// A value of another type: its GType name and GStreamer's serialization of it.
  case other(type: String, serialized: String)

  /// A short description of the value's kind, for error messages.
  public var kindName: String {
    switch self {
    case .bool: "bool"
    case .int: "int"
    case .uint: "uint"
    case .double: "double"
    case .string: "string"
    case .null: "null"
    case .enumeration: "enum"
    case .flags: "flags"
    case .fraction: "fraction"
    case .intRange: "int range"
    case .doubleRange: "double range"
    case .fractionRange: "fraction range"
    case .list: "list"
    case .array: "array"
    case .caps: "caps"
    case .structure: "structure"
    case .object: "object"
    case .other(let type, _): type
    }
  }

  /// The value as written in caps strings and gst-launch descriptions.
  public var description: String {
    switch self {
    case .bool(let value): value ? "true" : "false"
    case .int(let value): "\(value)"
    case .uint(let value): "\(value)"
    case .double(let value): "\(value)"
    case .string(let value): "\"\(value)\""
    case .null: "NULL"
    case .enumeration(let nick): nick
    case .flags(let nicks): nicks.joined(separator: "+")
    case .fraction(let value): value.description
    case .intRange(let min, let max, let step): step == 1 ? "[ \(min), \(max) ]" : "[ \(min), \(max), \(step) ]"
    case .doubleRange(let min, let max): "[ \(min), \(max) ]"
    case .fractionRange(let min, let max): "[ \(min), \(max) ]"
    case .list(let values): "{ " + values.map(\.description).joined(separator: ", ") + " }"
    case .array(let values): "< " + values.map(\.description).joined(separator: ", ") + " >"
    case .caps(let caps): caps.description
    case .structure(let structure): structure.description
    case .object(let object): object.description
    case .other(_, let serialized): serialized
    }
  }
}

// MARK: - Swift types that convert to and from values

/// A Swift type that can be read from and written to a ``Value``: properties and caps fields
/// accept and return these directly (`element.set("bitrate", 2_000_000)`).
public protocol ValueConvertible: Sendable {
  /// The value to write.
  var value: Value { get }
  /// Reads a value; nil when it is of another type or out of this type's range.
  init?(value: Value)
}

extension Value: ValueConvertible {
  /// The value itself.
  public var value: Value { self }
  /// The value itself.
  public init?(value: Value) { self = value }
}

extension Bool: ValueConvertible {
  /// `.bool`.
  public var value: Value { .bool(self) }
  /// Reads `.bool`.
  public init?(value: Value) {
    guard case .bool(let flag) = value else { return nil }
    self = flag
  }
}

/// Integers convert from `.int` and `.uint` when the number fits.
extension FixedWidthInteger where Self: ValueConvertible {
  /// `.int` for signed types, `.uint` for unsigned ones.
  public var value: Value { Self.isSigned ? .int(Int(self)) : .uint(UInt(self)) }
  /// Reads `.int` or `.uint` when the number fits in this type.
  public init?(value: Value) {
    switch value {
    case .int(let number): guard let exact = Self(exactly: number) else { return nil }; self = exact
    case .uint(let number): guard let exact = Self(exactly: number) else { return nil }; self = exact
    default: return nil
    }
  }
}

extension Int: ValueConvertible {}
extension Int8: ValueConvertible {}
extension Int16: ValueConvertible {}
extension Int32: ValueConvertible {}
extension Int64: ValueConvertible {}
extension UInt: ValueConvertible {}
extension UInt8: ValueConvertible {}
extension UInt16: ValueConvertible {}
extension UInt32: ValueConvertible {}
extension UInt64: ValueConvertible {}

extension Double: ValueConvertible {
  /// `.double`.
  public var value: Value { .double(self) }
  /// Reads `.double`, or an integer that a double represents exactly.
  public init?(value: Value) {
    switch value {
    case .double(let number): self = number
    case .int(let number): guard let exact = Double(exactly: number) else { return nil }; self = exact
    case .uint(let number): guard let exact = Double(exactly: number) else { return nil }; self = exact
    default: return nil
    }
  }
}

extension Float: ValueConvertible {
  /// `.double`.
  public var value: Value { .double(Double(self)) }
  /// Reads what `Double` reads.
  public init?(value: Value) {
    guard let number = Double(value: value) else { return nil }
    self = Float(number)
  }
}

extension String: ValueConvertible {
  /// `.string`.
  public var value: Value { .string(self) }
  /// Reads `.string`, and the nick of `.enumeration` and `.flags`.
  public init?(value: Value) {
    switch value {
    case .string(let text): self = text
    case .enumeration(let nick): self = nick
    case .flags(let nicks): self = nicks.joined(separator: "+")
    default: return nil
    }
  }
}

extension Fraction: ValueConvertible {
  /// `.fraction`.
  public var value: Value { .fraction(self) }
  /// Reads `.fraction`.
  public init?(value: Value) {
    guard case .fraction(let fraction) = value else { return nil }
    self = fraction
  }
}

extension Optional: ValueConvertible where Wrapped: ValueConvertible {
  /// The wrapped value, or `.null`.
  public var value: Value { self?.value ?? .null }
  /// `.null` reads as nil; anything else as `Wrapped`.
  public init?(value: Value) {
    if case .null = value {
      self = .none
      return
    }
    guard let wrapped = Wrapped(value: value) else { return nil }
    self = .some(wrapped)
  }
}

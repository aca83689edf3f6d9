internal import CGStreamer
import Foundation

/// Why a ``Value`` could not be written into a `GValue` of a given type.
enum ValueWriteError: Error {
  /// The value is of another kind than the type.
  case typeMismatch
  /// The kind fits but the value does not (out of range, unknown nick…).
  case invalid(String)
}

/// The name of a GType, for error messages.
func gTypeName(_ type: GType) -> String {
  g_type_name(type).map { String(cString: $0) } ?? "GType \(type)"
}

extension Value {
  // MARK: - Reading

  /// Reads a GValue of any type.
  init(reading value: UnsafePointer<GValue>) {
    let type = cgst_value_type(value)
    switch type {
    case cgst_type_fraction():
      self = .fraction(
        Fraction(gst_value_get_fraction_numerator(value), gst_value_get_fraction_denominator(value)))
      return
    case cgst_type_int_range():
      self = .intRange(
        min: gst_value_get_int_range_min(value), max: gst_value_get_int_range_max(value),
        step: gst_value_get_int_range_step(value))
      return
    case cgst_type_double_range():
      self = .doubleRange(min: gst_value_get_double_range_min(value), max: gst_value_get_double_range_max(value))
      return
    case cgst_type_fraction_range():
      let minimum = Value(reading: gst_value_get_fraction_range_min(value))
      let maximum = Value(reading: gst_value_get_fraction_range_max(value))
      if case .fraction(let low) = minimum, case .fraction(let high) = maximum {
        self = .fractionRange(min: low, max: high)
        return
      }
    case cgst_type_list():
      self = .list((0..<gst_value_list_get_size(value)).map { Value(reading: gst_value_list_get_value(value, $0)) })
      return
    case cgst_type_array():
      self = .array(
        (0..<gst_value_array_get_size(value)).map { Value(reading: gst_value_array_get_value(value, $0)) })
      return
    case cgst_type_caps():
      self = gst_value_get_caps(value).map { .caps(Caps(retaining: UnsafeMutablePointer(mutating: $0))) } ?? .null
      return
    case cgst_type_structure():
      self = gst_value_get_structure(value).map { .structure(Structure(copying: $0)) } ?? .null
      return
    default:
      break
    }
    switch cgst_type_fundamental(type) {
    case cgst_type_boolean(): self = .bool(g_value_get_boolean(value) != 0)
    case cgst_type_char(): self = .int(Int(g_value_get_schar(value)))
    case cgst_type_uchar(): self = .uint(UInt(g_value_get_uchar(value)))
    case cgst_type_int(): self = .int(Int(g_value_get_int(value)))
    case cgst_type_uint(): self = .uint(UInt(g_value_get_uint(value)))
    case cgst_type_long(): self = .int(Int(g_value_get_long(value)))
    case cgst_type_ulong(): self = .uint(UInt(g_value_get_ulong(value)))
    case cgst_type_int64(): self = .int(Int(g_value_get_int64(value)))
    case cgst_type_uint64(): self = .uint(UInt(g_value_get_uint64(value)))
    case cgst_type_float(): self = .double(Double(g_value_get_float(value)))
    case cgst_type_double(): self = .double(g_value_get_double(value))
    case cgst_type_string(): self = g_value_get_string(value).map { .string(String(cString: $0)) } ?? .null
    case cgst_type_enum(): self = .enumeration(Self.enumNick(type: type, value: g_value_get_enum(value)))
    case cgst_type_flags(): self = .flags(Self.flagNicks(type: type, value: g_value_get_flags(value)))
    case cgst_type_object():
      if let object = g_value_get_object(value), g_type_is_a(cgst_instance_type(object), gst_object_get_type()) != 0 {
        self = .object(Object.wrap(retaining: object))
      } else if g_value_get_object(value) == nil {
        self = .null
      } else {
        self = .other(type: gTypeName(type), serialized: Self.serialize(value))
      }
    default:
      self = .other(type: gTypeName(type), serialized: Self.serialize(value))
    }
  }

  private static func serialize(_ value: UnsafePointer<GValue>) -> String {
    guard let text = gst_value_serialize(value) else { return "" }
    defer { g_free(text) }
    return String(cString: text)
  }

  private static func enumNick(type: GType, value: gint) -> String {
    let enumClass = g_type_class_ref(type)!.assumingMemoryBound(to: GEnumClass.self)
    defer { g_type_class_unref(enumClass) }
    return g_enum_get_value(enumClass, value).map { String(cString: $0.pointee.value_nick) } ?? "\(value)"
  }

  private static func flagNicks(type: GType, value: guint) -> [String] {
    let flagsClass = g_type_class_ref(type)!.assumingMemoryBound(to: GFlagsClass.self)
    defer { g_type_class_unref(flagsClass) }
    var nicks: [String] = []
    var rest = value
    while rest != 0, let flag = g_flags_get_first_value(flagsClass, rest) {
      nicks.append(String(cString: flag.pointee.value_nick))
      rest &= ~flag.pointee.value
      if flag.pointee.value == 0 { break }
    }
    return nicks
  }

  // MARK: - Writing

  /// Initializes `gvalue` (which must be zeroed) to `type` and writes this value into it.
  /// On failure `gvalue` is left initialized to `type`; the caller unsets it either way.
  func write(into gvalue: UnsafeMutablePointer<GValue>, as type: GType) throws(ValueWriteError) {
    g_value_init(gvalue, type)
    switch (type, self) {
    case (cgst_type_fraction(), .fraction(let fraction)):
      guard fraction.denominator != 0 else { throw .invalid("a fraction's denominator cannot be 0") }
      gst_value_set_fraction(gvalue, fraction.numerator, fraction.denominator)
      return
    case (cgst_type_fraction(), _): throw .typeMismatch
    case (cgst_type_int_range(), .intRange(let low, let high, let step)):
      guard low < high, step > 0 else { throw .invalid("an integer range needs min < max and a step above 0") }
      gst_value_set_int_range_step(gvalue, low, high, step)
      return
    case (cgst_type_double_range(), .doubleRange(let low, let high)):
      gst_value_set_double_range(gvalue, low, high)
      return
    case (cgst_type_fraction_range(), .fractionRange(let low, let high)):
      gst_value_set_fraction_range_full(gvalue, low.numerator, low.denominator, high.numerator, high.denominator)
      return
    case (cgst_type_list(), .list(let items)), (cgst_type_array(), .array(let items)):
      for item in items {
        var element = GValue()
        defer { g_value_unset(&element) }
        try item.write(into: &element, as: item.naturalType)
        if type == cgst_type_list() {
          gst_value_list_append_value(gvalue, &element)
        } else {
          gst_value_array_append_value(gvalue, &element)
        }
      }
      return
    case (cgst_type_caps(), .caps(let caps)):
      caps.withPointer { g_value_set_boxed(gvalue, UnsafeRawPointer($0)) }
      return
    case (cgst_type_caps(), .null), (cgst_type_structure(), .null):
      return
    case (cgst_type_structure(), .structure(let structure)):
      structure.withPointer { g_value_set_boxed(gvalue, UnsafeRawPointer($0)) }
      return
    case (cgst_type_int_range(), _), (cgst_type_double_range(), _), (cgst_type_fraction_range(), _),
      (cgst_type_list(), _), (cgst_type_array(), _), (cgst_type_caps(), _), (cgst_type_structure(), _):
      throw .typeMismatch
    default:
      break
    }
    let fundamental = cgst_type_fundamental(type)
    switch fundamental {
    case cgst_type_boolean():
      guard case .bool(let flag) = self else { throw .typeMismatch }
      g_value_set_boolean(gvalue, flag ? 1 : 0)
    case cgst_type_char(): g_value_set_schar(gvalue, try integer(Int8.self))
    case cgst_type_uchar(): g_value_set_uchar(gvalue, try integer(UInt8.self))
    case cgst_type_int(): g_value_set_int(gvalue, try integer(Int32.self))
    case cgst_type_uint(): g_value_set_uint(gvalue, try integer(UInt32.self))
    case cgst_type_long(): g_value_set_long(gvalue, try integer(Int.self))
    case cgst_type_ulong(): g_value_set_ulong(gvalue, try integer(UInt.self))
    case cgst_type_int64(): g_value_set_int64(gvalue, gint64(try integer(Int64.self)))
    case cgst_type_uint64(): g_value_set_uint64(gvalue, guint64(try integer(UInt64.self)))
    case cgst_type_float(), cgst_type_double():
      switch self {
      case .double, .int, .uint:
        guard let number = Double(value: self) else { throw .invalid("not exactly representable as a double") }
        if fundamental == cgst_type_float() {
          g_value_set_float(gvalue, Float(number))
        } else {
          g_value_set_double(gvalue, number)
        }
      default: throw .typeMismatch
      }
    case cgst_type_string():
      switch self {
      case .string(let text): g_value_set_string(gvalue, text)
      case .null: g_value_set_string(gvalue, nil)
      default: throw .typeMismatch
      }
    case cgst_type_enum():
      g_value_set_enum(gvalue, try enumValue(type))
    case cgst_type_flags():
      g_value_set_flags(gvalue, try flagsValue(type))
    case cgst_type_object():
      switch self {
      case .null: g_value_set_object(gvalue, nil)
      case .object(let object):
        guard object.isA(type) else { throw .invalid("a \(object.typeName) is not a \(gTypeName(type))") }
        g_value_set_object(gvalue, object.rawPointer)
      default: throw .typeMismatch
      }
    default:
      guard case .other(let otherType, let serialized) = self, otherType == gTypeName(type) else {
        throw .typeMismatch
      }
      guard gst_value_deserialize(gvalue, serialized) != 0 else { throw .invalid("cannot parse '\(serialized)'") }
    }
  }

  /// The integer in `T`, from `.int` or `.uint`, or an error naming the range.
  private func integer<T: FixedWidthInteger & ValueConvertible>(_: T.Type) throws(ValueWriteError) -> T {
    switch self {
    case .int, .uint:
      guard let number = T(value: self) else { throw .invalid("out of range \(T.min)...\(T.max)") }
      return number
    default:
      throw .typeMismatch
    }
  }

  private func enumValue(_ type: GType) throws(ValueWriteError) -> gint {
    let enumClass = g_type_class_ref(type)!.assumingMemoryBound(to: GEnumClass.self)
    defer { g_type_class_unref(enumClass) }
    switch self {
    case .enumeration(let nick), .string(let nick):
      if let found = g_enum_get_value_by_nick(enumClass, nick) ?? g_enum_get_value_by_name(enumClass, nick) {
        return found.pointee.value
      }
      if let number = Int32(nick), g_enum_get_value(enumClass, number) != nil { return number }
      throw .invalid("not one of \(Self.enumNicks(enumClass).joined(separator: ", "))")
    case .int, .uint:
      guard let number = Int32(value: self), g_enum_get_value(enumClass, number) != nil else {
        throw .invalid("not one of \(Self.enumNicks(enumClass).joined(separator: ", "))")
      }
      return number
    default:
      throw .typeMismatch
    }
  }

  private static func enumNicks(_ enumClass: UnsafeMutablePointer<GEnumClass>) -> [String] {
    (0..<Int(enumClass.pointee.n_values)).map { String(cString: enumClass.pointee.values[$0].value_nick) }
  }

  private func flagsValue(_ type: GType) throws(ValueWriteError) -> guint {
    let flagsClass = g_type_class_ref(type)!.assumingMemoryBound(to: GFlagsClass.self)
    defer { g_type_class_unref(flagsClass) }
    let nicks: [String]
    switch self {
    case .flags(let list): nicks = list
    case .string(let text): nicks = text.split(whereSeparator: { $0 == "+" || $0 == "|" }).map(String.init)
    case .uint, .int:
      guard let number = UInt32(value: self) else { throw .invalid("out of range") }
      return number
    default: throw .typeMismatch
    }
    var result: guint = 0
    for nick in nicks {
      let trimmed = nick.trimmingCharacters(in: .whitespaces)
      guard let flag = g_flags_get_value_by_nick(flagsClass, trimmed) ?? g_flags_get_value_by_name(flagsClass, trimmed)
      else {
        let known = (0..<Int(flagsClass.pointee.n_values)).map {
          String(cString: flagsClass.pointee.values[$0].value_nick)
        }
        throw .invalid("'\(trimmed)' is not one of \(known.joined(separator: ", "))")
      }
      result |= flag.pointee.value
    }
    return result
  }

  // MARK: - The GType a value takes where no type is imposed (caps and structure fields)

  /// The type a field gets for this value: `gint` for integers that fit, else 64 bits, and so on.
  var naturalType: GType {
    switch self {
    case .bool: cgst_type_boolean()
    case .int(let number): Int32(exactly: number) != nil ? cgst_type_int() : cgst_type_int64()
    case .uint(let number): UInt32(exactly: number) != nil ? cgst_type_uint() : cgst_type_uint64()
    case .double: cgst_type_double()
    case .string, .enumeration, .flags, .null: cgst_type_string()
    case .fraction: cgst_type_fraction()
    case .intRange: cgst_type_int_range()
    case .doubleRange: cgst_type_double_range()
    case .fractionRange: cgst_type_fraction_range()
    case .list: cgst_type_list()
    case .array: cgst_type_array()
    case .caps: cgst_type_caps()
    case .structure: cgst_type_structure()
    case .object(let object): cgst_instance_type(object.rawPointer)
    case .other(let type, _): g_type_from_name(type)
    }
  }

  /// Writes into a field with no imposed type: enums and flags become their nick strings.
  func writeNatural(into gvalue: UnsafeMutablePointer<GValue>) throws(ValueWriteError) {
    switch self {
    case .enumeration(let nick): try Value.string(nick).write(into: gvalue, as: cgst_type_string())
    case .flags(let nicks): try Value.string(nicks.joined(separator: "+")).write(into: gvalue, as: cgst_type_string())
    case .other(let type, _) where g_type_from_name(type) == 0: throw .invalid("unknown type \(type)")
    default: try write(into: gvalue, as: naturalType)
    }
  }
}

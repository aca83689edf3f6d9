internal import CGStreamer

/// A time in nanoseconds, as GStreamer counts buffer timestamps and durations.
///
/// A time that is not set (`GST_CLOCK_TIME_NONE` in C) is `nil` wherever this type appears.
/// The corresponding C type is `GstClockTime`.
public struct ClockTime: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The time in nanoseconds.
  public var nanoseconds: UInt64

  /// A time of `nanoseconds`.
  public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

  /// A Swift duration as a clock time (negative durations become 0).
  public init(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    nanoseconds = seconds < 0 ? 0 : UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
  }

  /// Zero.
  public static let zero = ClockTime(nanoseconds: 0)
  /// A time of whole seconds.
  public static func seconds(_ seconds: UInt64) -> ClockTime { ClockTime(nanoseconds: seconds * 1_000_000_000) }
  /// A time of whole milliseconds.
  public static func milliseconds(_ milliseconds: UInt64) -> ClockTime {
    ClockTime(nanoseconds: milliseconds * 1_000_000)
  }

  /// The time as a Swift duration.
  public var duration: Duration { .nanoseconds(Int64(clamping: nanoseconds)) }

  /// The time in seconds.
  public var seconds: Double { Double(nanoseconds) / 1e9 }

  /// The C value.
  var rawValue: GstClockTime { GstClockTime(nanoseconds) }

  /// Reads a C value, nil for `GST_CLOCK_TIME_NONE`.
  static func from(_ raw: GstClockTime) -> ClockTime? {
    raw == cgst_clock_time_none() ? nil : ClockTime(nanoseconds: UInt64(raw))
  }

  /// Writes an optional time as a C value.
  static func raw(_ time: ClockTime?) -> GstClockTime { time?.rawValue ?? cgst_clock_time_none() }

  /// Orders by time.
  public static func < (lhs: ClockTime, rhs: ClockTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

  /// `h:mm:ss.nnnnnnnnn`, as GStreamer prints times.
  public var description: String {
    let second: UInt64 = 1_000_000_000
    let total = nanoseconds / second
    let fraction = String(nanoseconds % second)
    return
      "\(total / 3600):\(pad(total / 60 % 60)):\(pad(total % 60)).\(String(repeating: "0", count: 9 - fraction.count))\(fraction)"
  }

  private func pad(_ value: UInt64) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

internal import CGStreamer

/// A clock that a pipeline runs on: buffers are timestamped in the clock's time, less the
/// pipeline's base time (``Element/baseTime``).
///
/// Several wrappers may stand for one clock; compare them with `==`.
/// The corresponding C type is `GstClock`.
public final class Clock: Object, @unchecked Sendable {
  var clockPointer: UnsafeMutablePointer<GstClock> { rawPointer.assumingMemoryBound(to: GstClock.self) }

  /// GStreamer's system clock, the one a pipeline uses when no element provides a clock of its own.
  ///
  /// By default it reads `CLOCK_MONOTONIC`: its ``time`` is what `clock_gettime(CLOCK_MONOTONIC)`
  /// returns, so times from other code that reads that clock compare with it directly.
  /// There is one system clock per process; every call returns a wrapper of it.
  /// The corresponding C function is `gst_system_clock_obtain`.
  public static var system: Clock {
    Gst.ensureInitialized()
    return Clock(adopting: UnsafeMutableRawPointer(gst_system_clock_obtain()))
  }

  /// The clock's time now, which only grows.
  ///
  /// The corresponding C function is `gst_clock_get_time`.
  public var time: ClockTime { ClockTime(nanoseconds: UInt64(gst_clock_get_time(clockPointer))) }
}

extension Element {
  /// The clock the element runs on, nil when it has none yet (a pipeline chooses one when it first
  /// goes to playing, and keeps it when it stops).
  ///
  /// The corresponding C function is `gst_element_get_clock`.
  public var clock: Clock? {
    gst_element_get_clock(elementPointer).map { Clock(adopting: UnsafeMutableRawPointer($0)) }
  }

  /// The clock time at which the element's running time was 0: a buffer of running time `pts` is
  /// shown or captured at clock time `pts + baseTime`.
  ///
  /// A pipeline chooses it when it starts playing and gives it to its elements.
  /// The corresponding C functions are `gst_element_get_base_time` and `gst_element_set_base_time`.
  public var baseTime: ClockTime {
    get { ClockTime(nanoseconds: UInt64(gst_element_get_base_time(elementPointer))) }
    set { gst_element_set_base_time(elementPointer, newValue.rawValue) }
  }

  /// The running time now: the clock's ``Clock/time`` less ``baseTime`` (0 if the clock is behind
  /// the base time); nil when the element has no clock.
  ///
  /// The corresponding C functions are `gst_element_get_clock`, `gst_clock_get_time` and
  /// `gst_element_get_base_time`.
  public var runningTime: ClockTime? {
    guard let clock else { return nil }
    let now = clock.time.nanoseconds
    let base = baseTime.nanoseconds
    return ClockTime(nanoseconds: now >= base ? now - base : 0)
  }
}

extension Pipeline {
  /// Makes the pipeline run on `clock` from now on, instead of choosing one when it plays (an audio
  /// source's or sink's own clock, such as pulsesrc's, or else the system clock).
  ///
  /// Takes effect at the next change to playing.
  /// The corresponding C function is `gst_pipeline_use_clock`.
  public func use(clock: Clock) {
    gst_pipeline_use_clock(rawPointer.assumingMemoryBound(to: GstPipeline.self), clock.clockPointer)
  }
}

internal import CGStreamerCheck
import GStreamer

/// An element (or a bin) alone, driven by hand: buffers and events pushed into its sink pad,
/// what comes out of its source pad pulled, and, with a test clock, time advanced by hand rather
/// than waited for. A test of one element's behaviour runs in milliseconds, with no socket and
/// no real time.
///
/// ```swift
/// let harness = try Harness(element: "rtpjitterbuffer")
/// harness.useTestClock()
/// harness.setSourceCaps(try Caps("application/x-rtp, media=video, clock-rate=90000, encoding-name=VP8"))
/// try harness.push(packet)
/// harness.crankClockWait()            // the jitter buffer's next timer fires
/// let request = harness.tryPullUpstreamEvent()
/// ```
///
/// One thread drives a harness; the element's own threads (a jitter buffer's timers, a queue's
/// source pad) may push into it meanwhile, which the harness's queues take. Pulls that wait,
/// wait at most ``pullTimeout``.
///
/// The corresponding C type is `GstHarness` (`gstreamer-check-1.0`).
public final class Harness {
  private let harness: UnsafeMutablePointer<GstHarness>

  /// How long ``pull()`` and the other waiting pulls wait at most: `gst_harness_pull`'s own
  /// 60 s, which a test's time limit cuts short.
  public static let pullTimeout = Duration.seconds(60)

  /// A harness around a new element of `factory`, through its `sink` and `src` pads (either
  /// may be absent, as a source's sink pad is).
  /// - Throws: ``GStreamerError`` when no element of `factory` can be made.
  public convenience init(element factory: String) throws(GStreamerError) {
    self.init(try Element.make(factory))
  }

  /// A harness around `element`, through its pads named `sinkPad` and `srcPad` (nil: none),
  /// which may be request pads.
  public init(_ element: Element, sinkPad: String? = "sink", srcPad: String? = "src") {
    harness = gst_harness_new_with_element(
      element.unsafeRawObject.assumingMemoryBound(to: GstElement.self), sinkPad, srcPad)
  }

  deinit { gst_harness_teardown(harness) }

  /// The element under test.
  public var element: Element {
    // A harness always holds its element.
    Object.wrap(borrowing: UnsafeMutableRawPointer(harness.pointee.element)) as! Element
  }

  // MARK: - Caps and state

  /// Sets the caps of what is pushed in, as a stream-start, caps and segment event.
  public func setSourceCaps(_ caps: Caps) {
    caps.withRawPointer { gst_harness_set_src_caps(harness, gst_caps_ref($0.assumingMemoryBound(to: GstCaps.self))) }
  }

  /// Sets the caps the harness's sink accepts (by default, anything).
  public func setSinkCaps(_ caps: Caps) {
    caps.withRawPointer { gst_harness_set_sink_caps(harness, gst_caps_ref($0.assumingMemoryBound(to: GstCaps.self))) }
  }

  /// Sets the element playing (the harness starts it so; this is for after a pause).
  public func play() { gst_harness_play(harness) }

  /// Whether the harness answers latency queries as a live source would (yes by default).
  public func setLive(_ live: Bool) { gst_harness_set_live(harness, live ? 1 : 0) }

  // MARK: - Data in and out

  /// Pushes `buffer` into the element's sink pad.
  /// - Throws: ``FlowError`` when the element refuses it.
  public func push(_ buffer: consuming Buffer) throws(FlowError) {
    let flow = gst_harness_push(harness, buffer.takeRaw().assumingMemoryBound(to: GstBuffer.self))
    if let error = FlowError(rawFlow: flow.rawValue) { throw error }
  }

  /// Pushes `event` into the element's sink pad; whether the element took it.
  @discardableResult public func push(event: Event) -> Bool {
    gst_harness_push_event(harness, event.newRawReference().assumingMemoryBound(to: GstEvent.self)) != 0
  }

  /// Sends `event` upstream into the element's source pad, as a downstream element's request
  /// (a keyframe request, say); whether the element took it.
  @discardableResult public func push(upstreamEvent event: Event) -> Bool {
    gst_harness_push_upstream_event(harness, event.newRawReference().assumingMemoryBound(to: GstEvent.self)) != 0
  }

  /// The next buffer out of the element, waiting for it up to ``pullTimeout``; nil if none came.
  public func pull() -> Buffer? { gst_harness_pull(harness).map { Buffer(adoptingRaw: UnsafeMutableRawPointer($0)) } }

  /// The next buffer out of the element if one is waiting; nil otherwise.
  public func tryPull() -> Buffer? {
    gst_harness_try_pull(harness).map { Buffer(adoptingRaw: UnsafeMutableRawPointer($0)) }
  }

  /// The next event out of the element's source pad if one is waiting; nil otherwise.
  public func tryPullEvent() -> Event? {
    gst_harness_try_pull_event(harness).map { Event(adoptingRaw: UnsafeMutableRawPointer($0)) }
  }

  /// The next event the element sent upstream if one is waiting; nil otherwise.
  public func tryPullUpstreamEvent() -> Event? {
    gst_harness_try_pull_upstream_event(harness).map { Event(adoptingRaw: UnsafeMutableRawPointer($0)) }
  }

  /// Every event the element has sent downstream and not yet pulled, in order.
  public func pullAllEvents() -> [Event] { Array(sequence(state: self) { $0.tryPullEvent() }) }

  /// Every event the element has sent upstream and not yet pulled, in order.
  public func pullAllUpstreamEvents() -> [Event] { Array(sequence(state: self) { $0.tryPullUpstreamEvent() }) }

  /// Buffers out of the element so far, pulled or not.
  public var buffersReceived: Int { Int(gst_harness_buffers_received(harness)) }
  /// Buffers out of the element not yet pulled.
  public var buffersWaiting: Int { Int(gst_harness_buffers_in_queue(harness)) }

  // MARK: - Time

  /// Gives the element a test clock: time moves only when the test moves it (``setTime(_:)``,
  /// ``crankClockWait()``).
  public func useTestClock() { gst_harness_use_testclock(harness) }

  /// Sets the test clock's time; whether it moved there. It only moves forward: an earlier
  /// time is refused (GStreamer's check library would abort the process).
  @discardableResult public func setTime(_ time: ClockTime) -> Bool {
    if let now = self.time, time < now { return false }
    gst_harness_set_time(harness, GstClockTime(time.nanoseconds))
    return true
  }

  /// The test clock's time now (the harness has its test clock from the start; ``useTestClock()``
  /// gives it to the element).
  public var time: ClockTime? {
    withTestClock { clock in
      let now = gst_clock_get_time(UnsafeMutableRawPointer(clock).assumingMemoryBound(to: GstClock.self))
      return ClockTime(nanoseconds: UInt64(now))
    }
  }

  /// Waits (up to ``pullTimeout``) for the element to wait on the test clock, moves the clock to
  /// the time it waits for and lets it go; whether a wait was let go. A jitter buffer's timers,
  /// a sink's synchronisation, a source's next buffer are such waits.
  @discardableResult public func crankClockWait() -> Bool { gst_harness_crank_single_clock_wait(harness) != 0 }

  /// Waits until the element waits on the test clock `count` times at once, up to `timeout`;
  /// whether it did. False without a test clock.
  public func waitForClockWaits(_ count: Int = 1, timeout: Duration = .seconds(5)) -> Bool {
    let milliseconds = UInt32(clamping: max(0, Int64((timeout / .milliseconds(1)).rounded(.up))))
    return withTestClock {
      gst_test_clock_timed_wait_for_multiple_pending_ids($0, UInt32(count), milliseconds, nil) != 0
    }
      ?? false
  }

  /// The time the element's earliest wait on the test clock is for, if it waits; nil otherwise.
  /// A wait may be stale for a moment after a push: the element's thread re-arms it.
  public var nextClockWait: ClockTime? {
    withTestClock { clock in
      let time = gst_test_clock_get_next_entry_time(clock)
      return time == GstClockTime.max ? nil : ClockTime(nanoseconds: UInt64(time))
    } ?? nil
  }

  /// `body` with the harness's test clock, borrowed for the call; nil without one.
  private func withTestClock<R>(_ body: (UnsafeMutablePointer<GstTestClock>) -> R) -> R? {
    guard let clock = gst_harness_get_testclock(harness) else { return nil }
    defer { gst_object_unref(clock) }
    return body(clock)
  }
}

import GStreamer
import Glibc
import RevueTestSupport
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct ClockTests {
    init() { TestEnvironment.prepare() }

    /// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds.
    private static func monotonicNow() -> UInt64 {
      var now = timespec()
      clock_gettime(CLOCK_MONOTONIC, &now)
      return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    @Test func systemClockIsTheMonotonicClock() {
      let clock = Clock.system
      let before = Self.monotonicNow()
      let time = clock.time.nanoseconds
      let after = Self.monotonicNow()
      let slack: UInt64 = 2_000_000
      #expect(
        time + slack >= before && time <= after + slack,
        "system clock \(time) ns, CLOCK_MONOTONIC between \(before) and \(after) ns")
      #expect(Clock.system == clock, "every wrapper of the system clock is the same clock")
    }

    @Test func liveBufferTimesMapToTheSystemClock() async throws {
      // An unsynchronized sink gets each buffer as soon as it is made (here within 1 ms of its
      // clock time). A synchronized sink would hold it for the pipeline's latency (one frame from
      // the live source plus the sink's 20 ms processing deadline: 30 ms here).
      let pipeline = try Pipeline(
        parsing: "videotestsrc is-live=true ! video/x-raw,framerate=100/1 ! appsink name=sink sync=false")
      pipeline.use(clock: .system)
      let sink = try pipeline.element(named: "sink", as: AppSink.self)
      let (arrivals, continuation) = AsyncStream.makeStream(of: (pts: ClockTime?, now: ClockTime).self)
      sink.setCallbacks { sample in continuation.yield((sample.buffer?.pts, Clock.system.time)) }
      try await pipeline.changeState(to: .playing)
      let samples = try await collect(10, of: arrivals, within: 10, "10 live buffers at the appsink")
      pipeline.stop()
      try #require(samples.count == 10)
      let baseTime = pipeline.baseTime
      for sample in samples {
        let pts = try #require(sample.pts)
        let offset = Int64(sample.now.nanoseconds) - Int64(pts.nanoseconds + baseTime.nanoseconds)
        #expect(
          abs(offset) < Int64(20_000_000 * TestEnvironment.timingAllowance),
          "buffer at \(pts) arrived \(Double(offset) / 1e6) ms off its clock time")
      }
    }

    @Test func runningTimeIsTheClockLessTheBaseTime() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc is-live=true ! fakesink")
      #expect(pipeline.runningTime == nil, "no clock before playing")
      try await pipeline.changeState(to: .playing)
      let clock = try #require(pipeline.clock)
      #expect(clock == Clock.system, "no element provides a clock, so the pipeline takes the system clock")
      let before = clock.time.nanoseconds - pipeline.baseTime.nanoseconds
      let running = try #require(pipeline.runningTime).nanoseconds
      let after = clock.time.nanoseconds - pipeline.baseTime.nanoseconds
      #expect(before <= running && running <= after)
      pipeline.stop()
    }

    @Test func baseTimeCanBeSet() throws {
      let element = try Element.make("fakesink")
      element.baseTime = .seconds(42)
      #expect(element.baseTime == .seconds(42))
    }

    @Test func usedClockWinsOverTheSourcesOwnClock() async throws {
      // ALSA's null device records silence, and alsasrc offers its own audio clock, which a
      // pipeline prefers to the system clock.
      let description = "alsasrc device=null ! fakesink"
      let chooser = try Pipeline(parsing: description)
      try await chooser.changeState(to: .playing)
      let chosen = try #require(chooser.clock)
      chooser.stop()
      #expect(chosen != Clock.system, "alsasrc's own clock (\(chosen.typeName)) should have been chosen")

      let pipeline = try Pipeline(parsing: description)
      pipeline.use(clock: .system)
      try await pipeline.changeState(to: .playing)
      let used = try #require(pipeline.clock)
      pipeline.stop()
      #expect(used == Clock.system, "the pipeline runs on \(used.typeName), not the clock it was given")
    }
  }
}

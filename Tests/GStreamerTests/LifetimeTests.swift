import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  /// Thousands of pipelines made, played, stopped and dropped leave no GStreamer object and no
  /// thread behind: every wrapper releases exactly the references it took. They count the objects
  /// and threads of the whole process, so they run alone.
  @Suite(.tier(.realtime), .wholeProcess, .timeLimit(.minutes(3))) struct LifetimeTests {
    init() { TestEnvironment.prepare() }

    /// Cycles watched: an object leaked every 60th cycle or more often exceeds the 50 allowed.
    static let cycles = 3_000

    /// Runs `cycle` a few times to warm caches and thread pools, then `cycles` times while the
    /// leaks tracer watches; returns the GStreamer objects still alive and the thread growth.
    /// Checkpoints every thousand cycles keep the tracer's books small; an object that outlives
    /// its thousand is counted once, so a leak of one object a cycle shows as `cycles`.
    private func measure(_ cycle: () throws -> Void) throws -> (alive: [String: Int], threads: Int) {
      try #require(LeaksTracer.isActive, "run with GST_TRACERS=leaks (RevueTestSupport sets it)")
      for _ in 0..<50 { try cycle() }
      let threadsBefore = TestEnvironment.threadCount
      LeaksTracer.startTracking()
      defer { LeaksTracer.stopTracking() }
      var alive: [String: Int] = [:]
      for _ in 0..<(Self.cycles / 1000) {
        for _ in 0..<1000 { try cycle() }
        alive.merge(LeaksTracer.checkpoint() ?? [:], uniquingKeysWith: +)
      }
      return (alive, TestEnvironment.threadCount - threadsBefore)
    }

    @Test func parsedPipelineCycles() throws {
      let (alive, threads) = try measure {
        let pipeline = try Pipeline(parsing: "fakesrc num-buffers=1 sizetype=fixed sizemax=64 ! identity ! fakesink")
        try pipeline.setState(.playing)
        _ = try pipeline.state(waitingUpTo: .seconds(5))
        pipeline.stop()
      }
      let total = alive.values.reduce(0, +)
      #expect(total < 50, "objects left alive after \(Self.cycles) cycles: \(alive)")
      #expect(threads <= 2, "threads grew by \(threads)")
    }

    @Test func elementsFromSwiftCycles() throws {
      let (alive, threads) = try measure {
        let pipeline = Pipeline()
        let source = try Element.make("fakesrc")
        let filter = try Element.make("capsfilter")
        let sink = try Element.make("appsink", as: AppSink.self)
        try source.set("num-buffers", 1)
        try source.set("sizetype", "fixed")
        try filter.set("caps", try Caps("application/x-revue-test, n=(int)1"))
        sink.drop = true
        try pipeline.addLinked(source, filter, sink)
        let messages = pipeline.bus.messages([.eos])
        try pipeline.setState(.playing)
        _ = sink.pullSample(timeout: .seconds(5))
        _ = try source.property("sizetype")
        pipeline.stop()
        _ = messages
      }
      let total = alive.values.reduce(0, +)
      #expect(total < 50, "objects left alive after \(Self.cycles) cycles: \(alive)")
      #expect(threads <= 2, "threads grew by \(threads)")
    }

    @Test func buffersPushedThroughAppElementsAreAllFreed() async throws {
      let pipeline = try Pipeline(
        parsing: "appsrc name=src format=time caps=application/x-revue-test ! queue ! appsink name=sink sync=false")
      let source = try pipeline.element(named: "src", as: AppSrc.self)
      let sink = try pipeline.element(named: "sink", as: AppSink.self)
      LeaksTracer.startTracking()
      defer { LeaksTracer.stopTracking() }
      let samples = sink.samples()
      try pipeline.play()
      for index in 0..<Self.cycles {
        var buffer = Buffer(copying: [UInt8(truncatingIfNeeded: index)])
        buffer.pts = .milliseconds(UInt64(index))
        try source.push(buffer)
      }
      try source.endOfStream()
      let count = try await withDeadline(60, "the end of the stream of \(Self.cycles) buffers") {
        var count = 0
        for await _ in samples { count += 1 }
        return count
      }
      pipeline.stop()
      #expect(count == Self.cycles)
      let alive = LeaksTracer.checkpoint() ?? [:]
      #expect((alive["GstBuffer"] ?? 0) < 10, "buffers left alive: \(alive)")
      #expect((alive["GstSample"] ?? 0) < 10, "samples left alive: \(alive)")
    }
  }
}

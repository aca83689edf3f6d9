import GStreamer
import RevueTestSupport
import Synchronization
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct AppTests {
    init() { TestEnvironment.prepare() }

    /// An appsrc ! appsink pipeline for opaque test data, timestamps in time.
    private func makePipeline(sinkOptions: String = "") throws -> (Pipeline, AppSrc, AppSink) {
      let pipeline = try Pipeline(
        parsing:
          "appsrc name=src format=time caps=application/x-revue-test ! appsink name=sink sync=false \(sinkOptions)")
      return (
        pipeline, try pipeline.element(named: "src", as: AppSrc.self),
        try pipeline.element(named: "sink", as: AppSink.self)
      )
    }

    /// Payload of buffer `index`: its index in 4 bytes, then bytes that depend on it.
    private func payload(_ index: Int) -> [UInt8] {
      withUnsafeBytes(of: UInt32(index).littleEndian, Array.init)
        + (0..<(index % 61)).map { UInt8(truncatingIfNeeded: index &+ $0) }
    }

    @Test func tenThousandBuffersRoundTripIntact() async throws {
      let (pipeline, source, sink) = try makePipeline()
      let count = 10_000
      let samples = sink.samples()
      try pipeline.play()
      let pusher = Task.detached {
        for index in 0..<count {
          var buffer = Buffer(copying: payload(index))
          buffer.pts = .milliseconds(UInt64(index))
          buffer.dts = .milliseconds(UInt64(index))
          buffer.duration = .milliseconds(1)
          try source.push(buffer)
        }
        try source.endOfStream()
      }
      let (received, mismatches) = try await withDeadline(30, "the end of the stream of \(count) buffers") {
        var received = 0
        var mismatches: [Int] = []
        for await sample in samples {
          let buffer = try #require(sample.buffer)
          if buffer.bytes != payload(received) || buffer.pts != .milliseconds(UInt64(received))
            || buffer.dts != .milliseconds(UInt64(received)) || buffer.duration != .milliseconds(1)
          {
            mismatches.append(received)
          }
          received += 1
        }
        return (received, mismatches)
      }
      try await withDeadline(10, "the pusher to return") { try await pusher.value }
      pipeline.stop()
      #expect(received == count)
      #expect(mismatches.isEmpty, "buffers out of order or changed: \(mismatches.prefix(5))")
    }

    @Test func pushPassesTheMemoryWithoutCopying() async throws {
      let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 64)
      defer { memory.deallocate() }
      memory.initializeMemory(as: UInt8.self, repeating: 0xAB)
      let released = Mutex(false)
      do {
        let (pipeline, source, sink) = try makePipeline()
        let samples = sink.samples()
        try pipeline.play()
        try source.push(Buffer(wrapping: memory) { released.withLock { $0 = true } })
        try source.endOfStream()
        // Addresses as integers: pointers do not cross tasks.
        let addresses = try await withDeadline(10, "the end of the stream") {
          var addresses: [Int?] = []
          for await sample in samples { addresses.append(sample.buffer?.dataAddress.map { Int(bitPattern: $0) }) }
          return addresses
        }
        #expect(addresses == [Int(bitPattern: memory.baseAddress)])
        pipeline.stop()
      }
      #expect(released.withLock { $0 }, "the pipeline still holds the memory after it was destroyed")
    }

    @Test func backPressureFromNeedAndEnoughData() async throws {
      let (pipeline, source, sink) = try makePipeline(sinkOptions: "max-buffers=1 drop=false")
      source.maxBuffers = 4
      let log = Mutex<[String]>([])
      let (events, continuation) = AsyncStream.makeStream(of: Void.self)
      let record: @Sendable (String) -> Void = { event in
        log.withLock { $0.append(event) }
        continuation.yield()
      }
      source.setCallbacks(needData: { _ in record("need") }, enoughData: { record("enough") })
      @Sendable func count(_ event: String) -> Int { log.withLock { $0.filter { $0 == event }.count } }
      /// Returns once `condition` holds, woken by each callback.
      func wait(for what: String, until condition: @escaping @Sendable () -> Bool) async throws {
        try await withDeadline(10, what) {
          if condition() { return }
          for await _ in events where condition() { return }
        }
      }
      try pipeline.play()
      try await wait(for: "appsrc's first need-data") { count("need") > 0 }
      // Nobody pulls from the sink, so the pipeline stalls and the source's queue fills up.
      var pushed = 0
      while count("enough") == 0 && pushed < 100 {
        try source.push(Buffer(copying: [UInt8(truncatingIfNeeded: pushed)]))
        pushed += 1
      }
      #expect(count("enough") == 1)
      #expect(pushed <= 8, "the queue of 4 should be full after a few buffers, not \(pushed)")
      // Draining the sink lets the queue empty, and the source asks for data again.
      let needsWhenFull = count("need")
      for _ in 0..<pushed { #expect(sink.pullSample(timeout: .seconds(5)) != nil) }
      try await wait(for: "appsrc to ask for data again") { count("need") > needsWhenFull }
      #expect(source.queuedBuffers == 0)
      pipeline.stop()
      continuation.finish()
    }

    @Test func dropPolicyKeepsTheNewest() async throws {
      let (pipeline, source, sink) = try makePipeline(sinkOptions: "max-buffers=2 drop=true wait-on-eos=false")
      #expect(sink.maxBuffers == 2 && sink.drop)
      try pipeline.play()
      for index in 0..<10 { try source.push(Buffer(copying: [UInt8(index)])) }
      try source.endOfStream()
      let done = pipeline.bus.messages([.eos])
      try await withDeadline(10, "end of stream") { for await _ in done { return } }
      var kept: [UInt8] = []
      while let sample = sink.pullSample(timeout: .zero) { kept += sample.buffer?.bytes ?? [] }
      #expect(kept == [8, 9])
      #expect(sink.isEndOfStream)
      pipeline.stop()
    }

    @Test func pushingAfterEndOfStreamOrStopIsAFlowError() async throws {
      let (pipeline, source, _) = try makePipeline(sinkOptions: "wait-on-eos=false")
      try pipeline.play()
      try source.endOfStream()
      #expect(throws: FlowError.eos) { try source.push(Buffer(size: 1)) }
      pipeline.stop()
      #expect(throws: FlowError.flushing) { try source.push(Buffer(size: 1)) }
    }

    @Test func callbackRunsOnTheStreamingThread() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc num-buffers=5 ! appsink name=sink sync=false")
      let sink = try pipeline.element(named: "sink", as: AppSink.self)
      let count = Mutex(0)
      sink.setCallbacks(newSample: { _ in count.withLock { $0 += 1 } })
      try await pipeline.playUntilEndOfStream(timeout: .seconds(20))
      #expect(count.withLock { $0 } == 5)
    }
  }
}

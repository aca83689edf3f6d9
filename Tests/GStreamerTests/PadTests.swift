import GStreamer
import RevueTestSupport
import Synchronization
import Testing

extension GStreamerSuite {
  @Suite(.timeLimit(.minutes(1))) struct PadTests {
    init() { TestEnvironment.prepare() }

    @Test func probeSeesAndChangesBuffers() async throws {
      let pipeline = try Pipeline(
        parsing:
          "appsrc name=src format=time caps=application/x-revue-test ! identity name=id ! appsink name=sink sync=false")
      let source = try pipeline.element(named: "src", as: AppSrc.self)
      let sink = try pipeline.element(named: "sink", as: AppSink.self)
      let pad = try #require(pipeline.element(named: "id")?.staticPad("src"))
      #expect(pad.direction == .source)
      let seen = Mutex(0)
      pad.addProbe(.buffer) { _, info in
        seen.withLock { $0 += 1 }
        guard var buffer = info.buffer else { return .ok }
        if buffer.bytes == [2] { return .drop }
        try? buffer.withUnsafeMutableBytes { $0[0] &+= 100 }
        info.buffer = buffer
        return .ok
      }
      let samples = sink.samples()
      try pipeline.play()
      for value in [UInt8(1), 2, 3] { try source.push(Buffer(copying: [value])) }
      try source.endOfStream()
      var received: [UInt8] = []
      for await sample in samples { received += sample.buffer?.bytes ?? [] }
      pipeline.stop()
      #expect(received == [101, 103])
      #expect(seen.withLock { $0 } == 3)
    }

    @Test func eventProbesAndRemoval() async throws {
      let pipeline = try Pipeline(parsing: "videotestsrc num-buffers=3 ! fakesink name=sink")
      let pad = try #require(pipeline.element(named: "sink")?.staticPad("sink"))
      let events = Mutex<[String]>([])
      let id = try #require(
        pad.addProbe(.eventDownstream) { _, info in
          events.withLock { $0.append(info.eventName ?? "?") }
          return .ok
        })
      try await pipeline.playUntilEndOfStream(timeout: .seconds(20))
      pad.removeProbe(id)
      let names = events.withLock { $0 }
      #expect(names.first == "stream-start")
      #expect(names.contains("caps") && names.contains("segment"))
      #expect(names.last == "eos")
    }

    @Test func padsLinksAndCaps() async throws {
      let pipeline = Pipeline()
      let source = try Element.make("videotestsrc")
      try source.set("num-buffers", 1)
      let sink = try Element.make("fakesink")
      try pipeline.add(source, sink)
      let sourcePad = try #require(source.staticPad("src"))
      let sinkPad = try #require(sink.staticPad("sink"))
      try sourcePad.link(sinkPad)
      #expect(sourcePad.isLinked)
      #expect(sourcePad.peer == sinkPad)
      #expect(sinkPad.element == sink)
      #expect(throws: GStreamerError.self) { try sourcePad.link(sinkPad) }
      try await pipeline.playUntilEndOfStream(timeout: .seconds(20))
      #expect(source.pads == [sourcePad])
      #expect(sourcePad.queryCaps().count > 0)
      #expect(throws: GStreamerError.noSuchPad(element: pipeline.name, pad: "nonsense_%u")) {
        try pipeline.requestPad("nonsense_%u")
      }
    }
  }
}

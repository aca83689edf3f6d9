import Foundation
import GStreamer
import RevueTestSupport
import Synchronization
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct PadTests {
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
      let received = try await withDeadline(20, "the end of the stream") {
        var received: [UInt8] = []
        for await sample in samples { received += sample.buffer?.bytes ?? [] }
        return received
      }
      pipeline.stop()
      #expect(received == [101, 103])
      #expect(seen.withLock { $0 } == 3)
    }

    /// A payloader pushes a frame of several packets as one buffer list: those count as buffers.
    @Test func capsOfFirstBufferSeesBufferLists() async throws {
      let pipeline = try Pipeline(
        parsing: "videotestsrc is-live=true ! video/x-raw,width=320,height=240,framerate=30/1"
          + " ! vp8enc deadline=1 keyframe-max-dist=1 ! rtpvp8pay name=pay mtu=200 ! fakesink")
      let pad = try #require(pipeline.element(named: "pay")?.staticPad("src"))
      try pipeline.play()
      let caps = await pad.capsOfFirstBuffer(timeout: .seconds(10))
      pipeline.stop()
      #expect(caps?.structure(at: 0).get("encoding-name", as: String.self) == "VP8")
    }

    @Test func sourcePadPushesSynchronouslyOnTheCallingThread() throws {
      let pipeline = Pipeline()
      let convert = try Element.make("videoconvert")
      let sink = try Element.make("appsink", as: AppSink.self)
      sink.sync = false
      try pipeline.addLinked(convert, sink)
      let source = Pad.makeSource(name: "src")
      try source.link(try #require(convert.staticPad("sink")))
      let delivered = Mutex<[(thread: pthread_t, width: Int?)]>([])
      sink.setCallbacks(newSample: { sample in
        delivered.withLock {
          $0.append((pthread_self(), sample.caps?.structure(at: 0).get("width", as: Int.self)))
        }
      })
      try pipeline.setState(.playing)
      #expect(source.push(event: .streamStart(id: "test")))
      #expect(source.push(event: .caps(try Caps("video/x-raw, format=NV12, width=64, height=48, framerate=0/1"))))
      #expect(source.push(event: .timeSegment))
      let info = try VideoInfo(format: "NV12", width: 64, height: 48)
      try source.push(Buffer(size: info.size))
      #expect(delivered.withLock { $0.count } == 1)
      #expect(source.push(event: .caps(try Caps("video/x-raw, format=NV12, width=32, height=24, framerate=0/1"))))
      try source.push(Buffer(size: try VideoInfo(format: "NV12", width: 32, height: 24).size))
      let calls = delivered.withLock { $0 }
      #expect(calls.count == 2)
      #expect(calls.allSatisfy { pthread_equal($0.thread, pthread_self()) != 0 })
      #expect(calls.map(\.width) == [64, 32])
      pipeline.stop()
    }

    @Test func defaultVideoLayouts() throws {
      let nv12 = try VideoInfo(format: "NV12", width: 1920, height: 1080)
      #expect(nv12.planeCount == 2)
      #expect(nv12.strides == [1920, 1920])
      #expect(nv12.offsets == [0, 1920 * 1080])
      #expect(nv12.size == 1920 * 1080 * 3 / 2)
      #expect(try nv12.planeHeight(1) == 540)
      let i420 = try VideoInfo(format: "I420", width: 640, height: 480)
      #expect(i420.strides == [640, 320, 320])
      #expect(try VideoInfo(format: "BGRA", width: 10, height: 10).strides == [40])
      #expect(throws: GStreamerError.self) { try VideoInfo(format: "NOPE", width: 10, height: 10) }
      #expect(throws: GStreamerError.self) { try VideoInfo(format: "NV12", width: 0, height: 10) }
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

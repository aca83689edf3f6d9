import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct PropertyTests {
    init() { TestEnvironment.prepare() }

    @Test func integersOfEveryWidth() throws {
      let video = try Element.make("videotestsrc")
      try video.set("num-buffers", Int32(42))
      #expect(try video.get("num-buffers", as: Int32.self) == 42)
      try video.set("foreground-color", UInt32.max)
      #expect(try video.get("foreground-color", as: UInt32.self) == UInt32.max)
      #expect(throws: GStreamerError.self) { try video.set("foreground-color", -1) }

      let audio = try Element.make("audiotestsrc")
      try audio.set("timestamp-offset", Int64.min)
      #expect(try audio.get("timestamp-offset", as: Int64.self) == Int64.min)

      let queue = try Element.make("queue")
      try queue.set("max-size-time", UInt64.max)
      #expect(try queue.get("max-size-time", as: UInt64.self) == UInt64.max)
      #expect(throws: GStreamerError.self) { try queue.get("max-size-time", as: Int64.self) }
      try queue.set("max-size-buffers", 7)
      #expect(try queue.get("max-size-buffers", as: Int.self) == 7)
      #expect(try queue.property("max-size-buffers") == .uint(7))
    }

    @Test func booleansDoublesFloatsAndStrings() throws {
      let audio = try Element.make("audiotestsrc", name: "tone")
      try audio.set("is-live", true)
      #expect(try audio.get("is-live", as: Bool.self))
      try audio.set("freq", 1000.5)
      #expect(try audio.get("freq", as: Double.self) == 1000.5)
      try audio.set("freq", 880)
      #expect(try audio.get("freq", as: Double.self) == 880)
      #expect(try audio.get("name", as: String.self) == "tone")
      try audio.set("name", "renamed")
      #expect(audio.name == "renamed")

      let amplify = try Element.make("audioamplify")
      try amplify.set("amplification", Float(2.5))
      #expect(try amplify.get("amplification", as: Float.self) == 2.5)
      #expect(try amplify.propertyTypeName("amplification") == "gfloat")
    }

    @Test func enumsByNick() throws {
      let video = try Element.make("videotestsrc")
      try video.set("pattern", "ball")
      #expect(try video.property("pattern") == .enumeration("ball"))
      try video.set("pattern", Value.enumeration("snow"))
      #expect(try video.get("pattern", as: String.self) == "snow")
      try video.set("pattern", 0)
      #expect(try video.get("pattern", as: String.self) == "smpte")
    }

    @Test func flagsByNick() throws {
      let identity = try Element.make("identity")
      try identity.set("drop-buffer-flags", Value.flags(["discont", "corrupted"]))
      guard case .flags(let nicks) = try identity.property("drop-buffer-flags") else {
        Issue.record("expected flags")
        return
      }
      #expect(Set(nicks) == ["discont", "corrupted"])
      try identity.set("drop-buffer-flags", "gap+droppable")
      #expect(
        Set(try identity.get("drop-buffer-flags", as: String.self).split(separator: "+")) == ["gap", "droppable"])
      #expect(throws: GStreamerError.self) { try identity.set("drop-buffer-flags", "gap+bogus") }
    }

    @Test func capsProperties() throws {
      let filter = try Element.make("capsfilter")
      let caps = try Caps("video/x-raw, format=NV12, width=640, height=480")
      try filter.set("caps", caps)
      #expect(try filter.get("caps", as: Caps.self) == caps)
      #expect(throws: GStreamerError.self) { try filter.set("caps", "video/x-raw") }
      try filter.set("caps", fromString: "audio/x-raw, rate=48000")
      #expect(try filter.get("caps", as: Caps.self).structure(at: 0).get("rate", as: Int.self) == 48000)
    }

    @Test func fromStringAsGstLaunchReadsIt() throws {
      let video = try Element.make("videotestsrc", name: "source")
      try video.set("pattern", fromString: "ball")
      try video.set("num-buffers", fromString: "12")
      try video.set("is-live", fromString: "true")
      #expect(try video.get("pattern", as: String.self) == "ball")
      #expect(try video.get("num-buffers", as: Int.self) == 12)
      #expect(try video.get("is-live", as: Bool.self))
      #expect(throws: GStreamerError.self) { try video.set("num-buffers", fromString: "twelve") }
      #expect(throws: GStreamerError.self) { try video.set("num-buffers", fromString: "-7") }
    }

    @Test func objectProperties() throws {
      let playbin = try Element.make("playbin")
      let sink = try Element.make("fakesink", name: "videosink")
      try playbin.set("video-sink", Value.object(sink))
      guard case .object(let stored) = try playbin.property("video-sink") else {
        Issue.record("expected an object")
        return
      }
      #expect(stored == sink)
      #expect(throws: GStreamerError.self) { try playbin.set("video-sink", Value.object(Pipeline().bus)) }
    }

    @Test func listsProperties() throws {
      let video = try Element.make("videotestsrc")
      #expect(video.propertyNames.contains("pattern"))
      #expect(video.hasProperty("is-live"))
      #expect(!video.hasProperty("nonsense"))
      #expect(video.factoryName == "videotestsrc")
    }
  }
}

import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct ErrorTests {
    init() { TestEnvironment.prepare() }

    @Test func unknownElementNamesTheFactory() {
      #expect(throws: GStreamerError.elementNotFound(factory: "nosuchelement", package: nil)) {
        try Element.make("nosuchelement")
      }
    }

    @Test func missingElementErrorNamesTheDebianPackage() {
      #expect(PluginPackages.package(providing: "vp8enc") == "gstreamer1.0-plugins-good")
      #expect(PluginPackages.package(providing: "x264enc") == "gstreamer1.0-plugins-ugly")
      #expect(PluginPackages.package(providing: "avdec_h264") == "gstreamer1.0-libav")
      #expect(PluginPackages.package(providing: "appsrc") == "gstreamer1.0-plugins-base")
      let error = GStreamerError.elementNotFound(factory: "x264enc", package: "gstreamer1.0-plugins-ugly")
      #expect(error.description.contains("apt-get install gstreamer1.0-plugins-ugly"))
    }

    @Test func unknownElementInAPipelineDescription() {
      #expect(throws: GStreamerError.elementNotFound(factory: "nosuchelement", package: nil)) {
        try Pipeline(parsing: "videotestsrc ! nosuchelement ! fakesink")
      }
    }

    @Test func unparsablePipelineCarriesGStreamersParseError() throws {
      let error = try #require(throws: GStreamerError.self) { try Pipeline(parsing: "videotestsrc ! ! fakesink") }
      guard case .parseFailed(let description, let glibError) = error else {
        Issue.record("expected parseFailed, got \(String(reflecting: error))")
        return
      }
      #expect(description == "videotestsrc ! ! fakesink")
      #expect(glibError.domain == "gst_parse_error")
      #expect(!glibError.message.isEmpty)
    }

    @Test func unknownPropertyInADescription() throws {
      let error = try #require(throws: GStreamerError.self) {
        try Pipeline(parsing: "videotestsrc nosuchproperty=3 ! fakesink")
      }
      guard case .parseFailed(_, let glibError) = error else {
        Issue.record("expected parseFailed, got \(String(reflecting: error))")
        return
      }
      #expect(glibError.message.contains("nosuchproperty"))
    }

    @Test func badPropertyName() throws {
      let source = try Element.make("videotestsrc", name: "source")
      #expect(throws: GStreamerError.noSuchProperty(element: "source", property: "nosuch")) {
        try source.set("nosuch", 1)
      }
      #expect(throws: GStreamerError.noSuchProperty(element: "source", property: "nosuch")) {
        try source.property("nosuch")
      }
    }

    @Test func wrongValueTypeNamesTheExpectedType() throws {
      let source = try Element.make("videotestsrc", name: "source")
      #expect(
        throws: GStreamerError.propertyTypeMismatch(
          element: "source", property: "num-buffers", expected: "gint", given: "string")
      ) { try source.set("num-buffers", "ten") }
      #expect(
        throws: GStreamerError.propertyTypeMismatch(
          element: "source", property: "is-live", expected: "gboolean", given: "int")
      ) { try source.set("is-live", 1) }
      #expect(
        throws: GStreamerError.propertyTypeMismatch(
          element: "source", property: "num-buffers", expected: "gint", given: "String")
      ) { try source.get("num-buffers", as: String.self) }
    }

    @Test func outOfRangeValuesAreRefusedNotClamped() throws {
      let source = try Element.make("videotestsrc", name: "source")
      let error = try #require(throws: GStreamerError.self) { try source.set("num-buffers", -5) }
      guard case .invalidPropertyValue(let element, let property, let value, _) = error else {
        Issue.record("expected invalidPropertyValue, got \(error)")
        return
      }
      #expect((element, property, value) == ("source", "num-buffers", "-5"))
      #expect(throws: GStreamerError.self) { try source.set("num-buffers", Int64.max) }
      #expect(try source.get("num-buffers", as: Int.self) == -1)
    }

    @Test func unknownEnumNickListsTheChoices() throws {
      let source = try Element.make("videotestsrc", name: "source")
      let error = try #require(throws: GStreamerError.self) { try source.set("pattern", "plaid") }
      guard case .invalidPropertyValue(_, "pattern", _, let reason) = error else {
        Issue.record("expected invalidPropertyValue, got \(error)")
        return
      }
      #expect(reason.contains("smpte") && reason.contains("ball"))
    }

    @Test func readOnlyAndConstructOnlyProperties() throws {
      let sink = try Element.make("fakesink", name: "sink")
      #expect(
        throws: GStreamerError.propertyNotAccessible(element: "sink", property: "last-sample", reason: "is read-only")
      ) { try sink.set("last-sample", Value.null) }
    }

    @Test func unlinkableElementsSayWhy() throws {
      let pipeline = Pipeline()
      let audio = try Element.make("audiotestsrc", name: "audio")
      let video = try Element.make("videoconvert", name: "video")
      try pipeline.add(audio, video)
      let error = try #require(throws: GStreamerError.self) { try audio.link(video) }
      guard case .linkFailed("audio", "video", let reason) = error else {
        Issue.record("expected linkFailed, got \(error)")
        return
      }
      #expect(reason.contains("audio/x-raw") && reason.contains("video/x-raw"))
    }

    @Test func linkingAcrossBinsIsRefused() throws {
      let source = try Element.make("fakesrc", name: "lonely")
      let sink = try Element.make("fakesink", name: "sink")
      let pipeline = Pipeline()
      try pipeline.add(sink)
      let error = try #require(throws: GStreamerError.self) { try source.link(sink) }
      guard case .linkFailed(_, _, let reason) = error else {
        Issue.record("expected linkFailed, got \(error)")
        return
      }
      #expect(reason.contains("same bin"))
    }

    @Test func addingAnElementTwiceIsRefused() throws {
      let pipeline = Pipeline()
      let first = try Element.make("fakesink", name: "sink")
      let second = try Element.make("fakesink", name: "sink")
      try pipeline.add(first)
      #expect(throws: GStreamerError.self) { try pipeline.add(first) }
      #expect(throws: GStreamerError.self) { try pipeline.add(second) }
    }

    @Test func stateChangeFailureCarriesTheElementsError() throws {
      let pipeline = try Pipeline(parsing: "filesrc name=reader location=/nonexistent/revue-test ! fakesink")
      let error = try #require(throws: GStreamerError.self) { try pipeline.setState(.paused) }
      guard case .stateChangeFailed(_, .paused, let busError) = error else {
        Issue.record("expected stateChangeFailed, got \(error)")
        return
      }
      let posted = try #require(busError)
      #expect(posted.source.contains("reader"))
      #expect(posted.error.domain == "gst-resource-error-quark")
      #expect((posted.debug ?? "").contains("/nonexistent/revue-test"))
      pipeline.stop()
    }

    @Test func awaitedStateChangeFailureThrows() async throws {
      let pipeline = try Pipeline(parsing: "filesrc location=/nonexistent/revue-test ! fakesink")
      await #expect(throws: GStreamerError.self) { try await pipeline.changeState(to: .playing) }
      pipeline.stop()
    }

    @Test func invalidCapsAreAnError() {
      #expect(throws: GStreamerError.capsParseFailed("video/x-raw, width=")) { try Caps("video/x-raw, width=") }
      #expect(throws: GStreamerError.self) { try Structure("not a structure, =") }
    }
  }
}

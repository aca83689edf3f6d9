import GStreamer
import RevueSDK
import RevueTestSupport
import Testing

@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(1))) struct PipelineConfigTests {
  @Test func commentsLinesAndVariables() throws {
    let config = PipelineConfig(
      text: """
        # a comment
        videotestsrc num-buffers=${N}   # trailing comment
          ! fakesink sync=${SYNC}
        """)
    #expect(
      try config.description(variables: ["N": "5", "SYNC": "false"])
        == "videotestsrc num-buffers=5 ! fakesink sync=false")
  }

  /// A `#` inside double quotes is text, not a comment: the overlay shows "Room #1"; a quote
  /// never closed on its line is an error that names its place.
  @Test func aHashInsideQuotesIsNotAComment() throws {
    let config = PipelineConfig(
      text: """
        videotestsrc num-buffers=1   # a comment
          ! textoverlay name=overlay text="Room #1, \\"#2\\"" ! fakesink   # "another"
        """)
    let description = try config.description()
    #expect(
      description == ##"videotestsrc num-buffers=1 ! textoverlay name=overlay text="Room #1, \"#2\"" ! fakesink"##)
    let pipeline = try Pipeline(parsing: description)
    let overlay = try #require(pipeline.element(named: "overlay"))
    #expect(try overlay.get("text", as: String.self) == ##"Room #1, "#2""##)
    #expect(
      throws: PipelineConfig.Error(source: "x.pipeline", line: 2, column: 21, reason: #"'"' without a closing '"'"#)
    ) {
      try PipelineConfig(text: "videotestsrc\n ! textoverlay text=\"Room #1 ! fakesink", source: "x.pipeline")
        .description()
    }
  }

  @Test func missingVariableNamesTheLine() {
    let config = PipelineConfig(text: "videotestsrc\n ! fakesink name=${NAME}", source: "x.pipeline")
    #expect(
      throws: PipelineConfig.Error(
        source: "x.pipeline", line: 2, column: 18,
        reason: "variable ${NAME} has no value (set it with -D NAME=…, or write ${NAME:-DEFAULT})")
    ) { try config.description() }
    #expect(throws: PipelineConfig.Error.self) { try PipelineConfig(text: "a ${OPEN").description() }
  }

  @Test func builtInConfigsAreShipped() throws {
    let description = try PipelineConfig.builtIn("selftest").description(variables: ["FRAMES": "3"])
    #expect(description.hasPrefix("videotestsrc num-buffers=3 ! "))
    #expect(throws: PipelineConfig.Error.self) { try PipelineConfig.builtIn("nonexistent") }
  }
}

@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(1))) struct PipelineConfigCheckTests {
  static func check(_ text: String, _ variables: [String: String] = [:]) -> String {
    do {
      return try PipelineConfig(text: text, source: "t.pipeline").checkedDescription(variables: variables)
    } catch {
      return "\(error)"
    }
  }

  @Test func unknownElementsPropertiesAndVariablesNameTheirPlace() {
    #expect(
      Self.check("videotestsrc\n  ! videoconvrt ! fakesink")
        == "t.pipeline:2:5: no element 'videoconvrt' (did you mean 'videoconvert'?)")
    #expect(
      Self.check("videotestsrc ! vp8enc targetbitrate=5 ! fakesink")
        == "t.pipeline:1:23: element 'vp8enc' has no property 'targetbitrate' (did you mean 'target-bitrate'?)")
    #expect(Self.check("videotestsrc ! ${ENC} ! fakesink").hasPrefix("t.pipeline:1:16: variable ${ENC} has no value"))
    #expect(Self.check("videotestsrc ! qqqqqqqqqq ! fakesink") == "t.pipeline:1:16: no element 'qqqqqqqqqq'")
  }

  @Test func defaultsCapsQuotesAndPadReferencesPass() {
    let text = """
      # a sender
      ${SOURCE:-videotestsrc is-live=true} ! video/x-raw,width=320 ! rtpbin.send_rtp_sink_0
      rtpbin name=rtpbin rtpbin.send_rtp_src_0 ! udpsink host=${HOST:-127.0.0.1} port=5004
      udpsrc caps="application/x-rtp, media=video" ! fakesink
      """
    #expect(
      Self.check(text)
        == "videotestsrc is-live=true ! video/x-raw,width=320 ! rtpbin.send_rtp_sink_0 rtpbin name=rtpbin rtpbin.send_rtp_src_0 ! udpsink host=127.0.0.1 port=5004 udpsrc caps=\"application/x-rtp, media=video\" ! fakesink"
    )
    #expect(Self.check("videotestsrc ! ${SINK:-fakesink}", ["SINK": "appsink"]) == "videotestsrc ! appsink")
  }
}

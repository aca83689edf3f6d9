import RevueSDK
import Testing

@Suite struct PipelineConfigTests {
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

  @Test func missingVariableNamesTheLine() {
    let config = PipelineConfig(text: "videotestsrc\n ! fakesink name=${NAME}", source: "x.pipeline")
    #expect(
      throws: PipelineConfig.Error(
        source: "x.pipeline", line: 2, reason: "variable ${NAME} has no value (set it with -D NAME=…)")
    ) { try config.description() }
    #expect(throws: PipelineConfig.Error.self) { try PipelineConfig(text: "a ${OPEN").description() }
  }

  @Test func builtInConfigsAreShipped() throws {
    let description = try PipelineConfig.builtIn("selftest").description(variables: ["FRAMES": "3"])
    #expect(description.hasPrefix("videotestsrc num-buffers=3 ! "))
    #expect(throws: PipelineConfig.Error.self) { try PipelineConfig.builtIn("nonexistent") }
  }
}

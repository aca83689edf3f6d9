import GStreamer
import GStreamerCheck
import RevueTestSupport
import Testing

extension GStreamerSuite {
  /// The harness itself: what goes in comes out, events both ways, the test clock.
  @Suite(.tier(.unit), .timeLimit(.minutes(1))) struct HarnessTests {
    init() { TestEnvironment.prepare() }

    @Test func buffersPushedInComeOutInOrder() throws {
      let harness = try Harness(element: "identity")
      harness.setSourceCaps(try Caps("application/x-test"))
      for byte: UInt8 in 1...3 { try harness.push(Buffer(copying: [byte])) }
      #expect(harness.buffersReceived == 3)
      let bytes = try (0..<3).map { _ in try #require(harness.tryPull()).withUnsafeBytes { Array($0) } }
      #expect(bytes == [[1], [2], [3]])
      #expect(harness.tryPull() == nil)
      // The caps went out as events ahead of the buffers.
      #expect(harness.pullAllEvents().contains { $0.caps.map { "\($0)" } == "application/x-test" })
    }

    @Test func anUpstreamEventReachesTheHarnessUpstream() throws {
      let harness = try Harness(element: "identity")
      harness.setSourceCaps(try Caps("application/x-test"))
      let request = try Structure("GstForceKeyUnit, all-headers=(boolean)true")
      #expect(harness.push(upstreamEvent: .customUpstream(request)))
      let names = harness.pullAllUpstreamEvents().compactMap { $0.structure?.name }
      #expect(names.contains("GstForceKeyUnit"), "\(names)")
    }

    @Test func theTestClockMovesOnlyForward() throws {
      let harness = try Harness(element: "identity")
      harness.useTestClock()
      #expect(harness.setTime(.milliseconds(500)))
      #expect(harness.time == .milliseconds(500))
      #expect(!harness.setTime(.milliseconds(100)))
      #expect(harness.time == .milliseconds(500))
      #expect(harness.nextClockWait == nil)
      #expect(!harness.waitForClockWaits(1, timeout: .milliseconds(10)))
    }

    @Test func aMissingElementIsAnError() {
      #expect(throws: GStreamerError.self) { try Harness(element: "nosuchelement") }
    }
  }
}

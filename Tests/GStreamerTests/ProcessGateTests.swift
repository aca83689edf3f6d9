import Testing

@testable import RevueTestSupport

/// The rule that decides which tests run together under `swift test` (``GateQueue``): the tests
/// that share the process first, a few at a time, then those that need it alone, one at a time.
@Suite(.tier(.unit), .sharedProcess) struct ProcessGateTests {
  @Test func readersRunFirstUpToTheLimitAndAWriterWaitsUntilNoneRunsOrWaits() {
    var gate = GateQueue<String>(maxReaders: 2)
    #expect(gate.arrive(.shared, "r1") == ["r1"])
    #expect(gate.arrive(.exclusive, "w1") == [], "a writer waits for the readers running")
    #expect(gate.arrive(.shared, "r2") == ["r2"], "a reader goes ahead of the waiting writer")
    #expect(gate.arrive(.shared, "r3") == [], "two readers at most")
    #expect(gate.leave(.shared) == ["r3"], "a reader waiting goes before the writer")
    #expect(gate.leave(.shared) == [])
    #expect(gate.leave(.shared) == ["w1"], "the writer, once no reader runs or waits")
    #expect(gate.arrive(.shared, "r4") == [], "nothing beside a writer")
    #expect(gate.arrive(.exclusive, "w2") == [])
    #expect(gate.leave(.exclusive) == ["r4"], "readers first again")
    #expect(gate.leave(.shared) == ["w2"])
    #expect(gate.leave(.exclusive) == [] && gate.readers == 0 && !gate.writer)
  }
}

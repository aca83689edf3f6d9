import Testing

@testable import RevueSDK

/// Issue 26: simulcast layers over WHIP follow the receiver's estimate: the layers it carries are
/// sent, from the smallest up, and the rest paused.
@Suite(.tier(.unit), .sharedProcess) struct SimulcastAllocationTests {
  /// 720p, 360p and 180p at seed 002's balanced bitrates.
  let bitrates = [1_700_000, 450_000, 120_000]
  let all = [true, true, true]

  @Test func theLayersThatFitAreOnFromTheSmallestUp() {
    #expect(SimulcastAllocation.layersOn(bitrates: bitrates, offered: all, on: all, estimate: 5_000_000) == all)
    #expect(
      SimulcastAllocation.layersOn(bitrates: bitrates, offered: all, on: all, estimate: 700_000) == [false, true, true])
    #expect(
      SimulcastAllocation.layersOn(bitrates: bitrates, offered: all, on: all, estimate: 300_000) == [
        false, false, true,
      ])
  }

  @Test func theSmallestStaysOnWhateverTheEstimate() {
    #expect(
      SimulcastAllocation.layersOn(bitrates: bitrates, offered: all, on: all, estimate: 0) == [false, false, true])
    // The answer took only the full size: it is the smallest then.
    #expect(
      SimulcastAllocation.layersOn(bitrates: bitrates, offered: [true, false, false], on: all, estimate: 0)
        == [true, false, false])
  }

  @Test func aLayerTheAnswerDidNotTakeStaysOff() {
    #expect(
      SimulcastAllocation.layersOn(bitrates: bitrates, offered: [true, false, true], on: all, estimate: 5_000_000)
        == [true, false, true])
  }

  /// A paused layer needs a tenth more than it costs; a layer on stays on down to its cost.
  @Test func aPausedLayerComesBackWithHeadroom() {
    let paused = [false, true, true]
    let justFits = 1_700_000 + 450_000 + 120_000
    #expect(SimulcastAllocation.layersOn(bitrates: bitrates, offered: all, on: paused, estimate: justFits) == paused)
    #expect(SimulcastAllocation.layersOn(bitrates: bitrates, offered: all, on: all, estimate: justFits) == all)
    #expect(
      SimulcastAllocation.layersOn(bitrates: bitrates, offered: all, on: paused, estimate: justFits * 11 / 10 + 1)
        == all)
  }
}

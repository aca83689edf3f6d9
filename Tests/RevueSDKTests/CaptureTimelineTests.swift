import GStreamer
import Testing

@testable import RevueSDK

/// Capture times become running times in order, as every send pipeline stamps them.
@Suite(.tier(.unit)) struct CaptureTimelineTests {
  @Test func captureTimesBecomeRunningTimesInOrder() {
    var timeline = CaptureTimeline(baseTime: ClockTime(nanoseconds: 1_000))
    // Captured before the start (in flight): the first is the start, the rest are refused (no
    // two frames of one time).
    #expect(timeline.runningTime(ofCapture: ClockTime(nanoseconds: 400)) == ClockTime(nanoseconds: 0))
    #expect(timeline.runningTime(ofCapture: ClockTime(nanoseconds: 900)) == nil)
    #expect(timeline.runningTime(ofCapture: ClockTime(nanoseconds: 1_000)) == nil)
    #expect(timeline.runningTime(ofCapture: ClockTime(nanoseconds: 1_500)) == ClockTime(nanoseconds: 500))
    // Captured before the last one stamped, or at the same time: refused, and the order kept.
    #expect(timeline.runningTime(ofCapture: ClockTime(nanoseconds: 1_200)) == nil)
    #expect(timeline.runningTime(ofCapture: ClockTime(nanoseconds: 1_500)) == nil)
    #expect(timeline.runningTime(ofCapture: ClockTime(nanoseconds: 900)) == nil)
    #expect(timeline.runningTime(ofCapture: ClockTime(nanoseconds: 1_501)) == ClockTime(nanoseconds: 501))
  }
}

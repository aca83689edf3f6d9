import GStreamer

/// Capture times on the system clock, made running times of one pipeline, in order: what every
/// send pipeline stamps its buffers with (PTS and DTS), so that RTP timestamps and sender reports
/// (RTP), and what an RTSP client or a WebRTC peer is sent, say when the media was captured, not
/// when it reached the pipeline.
///
/// Media captured before the pipeline started (in flight as it started) counts as its start;
/// media captured before the last one stamped is refused (a frame that overtook another).
struct CaptureTimeline: Sendable {
  /// The pipeline's base time: a capture time minus it is its running time.
  let baseTime: ClockTime
  /// The running time of the last media stamped.
  private var last: ClockTime?

  /// A timeline for a pipeline whose base time is `baseTime`.
  init(baseTime: ClockTime) { self.baseTime = baseTime }

  /// The running time of media captured at `captured`, or nil when it was captured before the
  /// last one stamped (the caller drops it). Several pieces of media captured before the start
  /// all take its time, 0.
  mutating func runningTime(ofCapture captured: ClockTime) -> ClockTime? {
    let time = ClockTime(nanoseconds: captured > baseTime ? captured.nanoseconds - baseTime.nanoseconds : 0)
    if let last, time < last || (time == last && time.nanoseconds > 0) { return nil }
    last = time
    return time
  }
}

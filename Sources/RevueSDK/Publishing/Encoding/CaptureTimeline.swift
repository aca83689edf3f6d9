import GStreamer

/// Capture times on the system clock, made running times of one pipeline, in order: what every
/// send pipeline stamps its buffers with (PTS and DTS), so that RTP timestamps and sender reports
/// (RTP), and what an RTSP client or a WebRTC peer is sent, say when the media was captured, not
/// when it reached the pipeline.
///
/// The first media captured before the pipeline started (in flight as it started) counts as its
/// start; media captured before the last one stamped, or at the same time, is refused (a frame
/// that overtook another, or more media from before the start): no two pieces share a time.
struct CaptureTimeline: Sendable {
  /// The pipeline's base time: a capture time minus it is its running time.
  let baseTime: ClockTime
  /// The running time of the last media stamped.
  private var last: ClockTime?

  /// A timeline for a pipeline whose base time is `baseTime`.
  init(baseTime: ClockTime) { self.baseTime = baseTime }

  /// The running time of media captured at `captured`, or nil when it was captured no later than
  /// the last one stamped (the caller drops it). Of the media captured before the start, the
  /// first takes its time, 0, and the rest are refused: under load a camera's frames can reach a
  /// pipeline that has just started most of a second late, and 24 frames stamped 0 were 24
  /// frames of one timestamp to ffmpeg ("non monotonically increasing").
  mutating func runningTime(ofCapture captured: ClockTime) -> ClockTime? {
    let time = ClockTime(nanoseconds: captured > baseTime ? captured.nanoseconds - baseTime.nanoseconds : 0)
    if let last, time <= last { return nil }
    last = time
    return time
  }
}

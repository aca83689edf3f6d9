import GStreamer
import Synchronization

/// The front of every send pipeline (an RTP sender's, a WHIP session's, an RTSP media's): the
/// media sink that takes a track's frames or audio to the pipeline's `appsrc`. The caps follow
/// the buffers (video given no frame rate gets the one the encoder is set for: x264enc holds one
/// frame more at an unknown rate), and each buffer is stamped with its capture time in the
/// source's running time (PTS and DTS, ``CaptureTimeline``): a camera's frames are 33 ms apart
/// on the wire as they were at the sensor, not as they happened to reach the feed, and a frame
/// and the audio captured with it carry the same time, so RTP timestamps and RTCP sender reports
/// say when the media was captured. A buffer with no capture time, or a source on another clock
/// than the system clock, is stamped with the running time it came at.
///
/// With no source attached, one not playing, or one that refuses (stopped), buffers are dropped,
/// and so is one captured before the last one pushed. The source may be attached after the
/// feed's track sends (a WHIP session's before its offer, an RTSP media's when its first client
/// plays) and changed (a new media for the next client).
///
/// Not playing includes the moment a pipeline starts to play: it gives its elements the clock
/// before their base time, and a buffer stamped between the two got the clock's whole time as
/// its running time (hours: the time since boot), so a clock-synced sink downstream waited for
/// it for hours and the media sent nothing more. gst-rtsp-server's UDP sink shares the
/// streaming thread of its TCP clients: 6 RTSP clients in 2,276 got nothing, each media
/// stuck in `gst_base_sink_wait_clock` after its first packet.
final class SourceFeed: MediaSink {
  private struct State {
    var source: AppSrc?
    /// The clock the source runs on, and whether it is the system clock (which capture times
    /// are read on); nil until it plays. Kept, not asked of the source at every buffer.
    var clock: (clock: Clock, isSystem: Bool)?
    /// The caps of the last buffer, as given (the source's may have the frame rate added).
    var caps: Caps?
    /// Capture times to the source's running time, once it plays.
    var timeline: CaptureTimeline?
    var framesSent = 0
  }
  private let state = Mutex(State())
  private let formats = Mutex<Set<PixelFormat>?>(nil)
  /// The frame rate given to video caps that have none (`0/1`, as pushed frames do).
  private let frameRate: Int?

  /// A feed with no source yet; for video, `frameRate` is the rate its encoder is set for.
  init(frameRate: Int? = nil) { self.frameRate = frameRate }

  /// The `appsrc` a feed pushes into, named `name`: live, in time, no latency of its own,
  /// holding at most two video frames or eight audio buffers whatever their size (the oldest
  /// dropped when full), so that a slow encoder never holds up the capture thread. It stamps
  /// nothing itself: the feed does.
  static func source(named name: String = "source", audio: Bool = false) -> ElementRecipe {
    ElementRecipe(
      "appsrc", name: name,
      [
        "is-live": .bool(true), "format": .enumeration("time"), "min-latency": .int(0), "max-bytes": .int(0),
        "max-buffers": .int(audio ? 8 : MediaPipeline.queuedFrames), "leaky-type": .enumeration("downstream"),
      ])
  }

  /// Feeds `source` from now on (nil: nothing). The source stamps nothing itself
  /// (`do-timestamp=false`): the feed does.
  func attach(_ source: AppSrc?) {
    state.withLock { $0 = State(source: source, framesSent: $0.framesSent) }
  }

  /// The raw formats the encoders after the source take as they come, set by
  /// ``MediaPipeline/addMedia(from:source:branches:)``; nil when not known (any).
  var rawFormats: Set<PixelFormat>? {
    get { formats.withLock { $0 } }
    set { formats.withLock { $0 = newValue } }
  }

  /// The source fed now, if any.
  var source: AppSrc? { state.withLock { $0.source } }

  /// Frames (or audio buffers) a source took.
  var framesSent: Int { state.withLock { $0.framesSent } }

  /// Receivers of WebRTC and RTSP are not told of mute (their RTCP carries no note of it, as
  /// an RTP publication's does): they get the placeholder, or nothing.
  func signal(muted: Bool) {}

  func send(_ buffer: Buffer, caps: Caps, capturedAt captured: ClockTime?) {
    state.withLock { state in
      guard let source = state.source, source.currentState == .playing else { return }
      if state.clock == nil { state.clock = source.clock.map { ($0, $0 == Clock.system) } }
      guard let (clock, isSystem) = state.clock else { return }
      if state.timeline == nil { state.timeline = CaptureTimeline(baseTime: source.baseTime) }
      guard let time = state.timeline?.runningTime(ofCapture: (isSystem ? captured : nil) ?? clock.time) else {
        return RevueLog.log(
          .debug, "Publication",
          "buffer dropped: captured no later than the last one fed, or before the start after another")
      }
      if state.caps != caps {
        source.caps = withFrameRate(caps)
        state.caps = caps
      }
      var buffer = buffer
      (buffer.pts, buffer.dts) = (time, time)
      do {
        try source.push(buffer)
        state.framesSent += 1
      } catch {
        RevueLog.log(.debug, "Publication", "buffer dropped: the pipeline refused it (\(error))")
      }
    }
  }

  /// `caps` with ``frameRate`` when they give none.
  private func withFrameRate(_ caps: Caps) -> Caps {
    guard let frameRate, caps.count == 1, caps.structure(at: 0).get("framerate", as: Fraction.self)?.numerator == 0
    else { return caps }
    var output = caps
    try? output.setField("framerate", Fraction(Int32(clamping: frameRate), 1))
    return output
  }
}

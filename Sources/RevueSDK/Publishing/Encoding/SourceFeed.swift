import GStreamer
import Synchronization

/// The media sink of a transport whose pipeline is built and started by someone else (an RTSP
/// media, built by gst-rtsp-server for its first client) or before its first buffer (a WHIP
/// sender): takes a track's frames or audio to that pipeline's `appsrc`. The caps follow the
/// buffers, and each buffer is stamped with its capture time in the source's running time (PTS
/// and DTS, ``CaptureTimeline``), as ``RTPSender`` stamps what it sends: a camera's frames are
/// 33 ms apart on the wire as they were at the sensor, not as they happened to reach the feed,
/// and a frame and the audio captured with it carry the same time. A buffer with no capture
/// time, or a source on another clock than the system clock, is stamped with the running time it
/// came at.
/// With no source attached, one not playing, or one that refuses (stopped), buffers are dropped,
/// and so is one captured before the last one pushed.
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
    var caps: Caps?
    /// Capture times to the source's running time, once it plays.
    var timeline: CaptureTimeline?
    var framesSent = 0
  }
  private let state = Mutex(State())

  /// The `appsrc` a feed pushes into, named `name`: live, in time, holding at most two video
  /// frames or eight audio buffers (the oldest dropped when full), so that a slow encoder never
  /// holds up the capture thread. It stamps nothing itself: the feed does.
  static func source(named name: String = "source", audio: Bool = false) -> ElementRecipe {
    ElementRecipe(
      "appsrc", name: name,
      [
        "is-live": .bool(true), "format": .enumeration("time"), "max-buffers": .int(audio ? 8 : 2),
        "leaky-type": .enumeration("downstream"),
      ])
  }

  /// Feeds `source` from now on (nil: nothing). The source stamps nothing itself
  /// (`do-timestamp=false`): the feed does.
  func attach(_ source: AppSrc?) {
    state.withLock { $0 = State(source: source, framesSent: $0.framesSent) }
  }

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
        return RevueLog.log(.debug, "Publication", "buffer dropped: captured before the last one fed")
      }
      if state.caps != caps {
        source.caps = caps
        state.caps = caps
      }
      var buffer = buffer
      (buffer.pts, buffer.dts) = (time, time)
      guard (try? source.push(buffer)) != nil else { return }
      state.framesSent += 1
    }
  }
}

import GStreamer
import Synchronization

/// Takes a track's frames to an `appsrc` (of an RTSP media, a WHIP sender): the caps follow the
/// frames, and the timestamps are the source's own (`do-timestamp`), taken as each frame comes,
/// since the pipeline's clock starts when it plays. With no source attached, or one that refuses
/// (not playing yet, or stopped), frames are dropped.
final class SourceFeed: VideoRenderer {
  private struct State {
    var source: AppSrc?
    var caps: Caps?
    var framesSent = 0
  }
  private let state = Mutex(State())

  /// Feeds `source` from now on (nil: nothing).
  func attach(_ source: AppSrc?) {
    state.withLock { ($0.source, $0.caps) = (source, nil) }
  }

  /// Frames a source took.
  var framesSent: Int { state.withLock { $0.framesSent } }

  func render(pixelBuffer: PixelBuffer) {
    state.withLock { state in
      guard let source = state.source else { return }
      let caps = pixelBuffer.caps
      if state.caps != caps {
        source.caps = caps
        state.caps = caps
      }
      var buffer = pixelBuffer.buffer
      (buffer.pts, buffer.dts) = (nil, nil)
      guard (try? source.push(buffer)) != nil else { return }
      state.framesSent += 1
    }
  }
}

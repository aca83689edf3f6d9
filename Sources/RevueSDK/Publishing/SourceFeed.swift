import GStreamer
import Synchronization

/// Takes a track's frames or audio to an `appsrc` (of an RTSP media, a WHIP sender): the caps
/// follow the buffers, and the timestamps are the source's own (`do-timestamp`), taken as each
/// buffer comes. With no source attached, one not playing, or one that refuses (stopped),
/// buffers are dropped.
///
/// Not playing includes the moment a pipeline starts to play: it gives its elements the clock
/// before their base time, and a buffer stamped between the two got the clock's whole time as
/// its running time (hours: the time since boot), so a clock-synced sink downstream waited for
/// it for hours and the media sent nothing more. gst-rtsp-server's UDP sink shares the
/// streaming thread of its TCP clients: 6 RTSP clients in 2,276 got nothing, each media
/// stuck in `gst_base_sink_wait_clock` after its first packet.
final class SourceFeed: VideoRenderer, AudioRenderer {
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

  /// Frames (or audio buffers) a source took.
  var framesSent: Int { state.withLock { $0.framesSent } }

  func render(pixelBuffer: PixelBuffer) { push(pixelBuffer.buffer, caps: pixelBuffer.caps) }

  func render(pcmBuffer: AudioPCMBuffer) { push(pcmBuffer.buffer, caps: pcmBuffer.caps) }

  private func push(_ buffer: Buffer, caps: Caps) {
    state.withLock { state in
      guard let source = state.source, source.currentState == .playing else { return }
      if state.caps != caps {
        source.caps = caps
        state.caps = caps
      }
      var buffer = buffer
      (buffer.pts, buffer.dts) = (nil, nil)
      guard (try? source.push(buffer)) != nil else { return }
      state.framesSent += 1
    }
  }
}

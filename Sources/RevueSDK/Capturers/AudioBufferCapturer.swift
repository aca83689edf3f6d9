import GStreamer
import Synchronization

/// The capturer of an audio buffer track: the App pushes its own audio with ``capture(_:)``.
///
/// It is idle until ``AudioCapturer/startCapture()`` and drops every buffer meanwhile. Buffers
/// of any rate, channel count and sample format are converted to the track's format
/// (``LocalAudioTrack/format``), following a format that changes mid-stream.
public final class AudioBufferCapturer: AudioCapturer, @unchecked Sendable {
  // Safety (@unchecked): the conversion chain is used under its Mutex only.

  private let conversion = Mutex<AudioConversion?>(nil)
  let format: AudioFormat

  init(format: AudioFormat) {
    self.format = format
    super.init()
  }

  deinit {
    if captureState == .capturing {
      RevueLog.log(.error, "AudioBufferCapturer", "released while capturing: call stopCapture() before releasing it")
    }
  }

  /// Stops capturing and frees the conversion pipeline.
  public override func stopCapture() async throws {
    try await super.stopCapture()
    conversion.withLock { $0 = nil }
  }

  /// Sends a buffer of audio, converted to the track's format. Call it from the thread that
  /// produces the audio; buffers pushed while idle are dropped. A buffer's timestamp, when it
  /// has one, is its capture time on the monotonic clock (`CLOCK_MONOTONIC`, GStreamer's system
  /// clock); a buffer without one is timed now.
  public func capture(_ buffer: AudioPCMBuffer) {
    guard captureState == .capturing else {
      RevueLog.log(.debug, "AudioBufferCapturer", "buffer dropped: the capturer is idle (call startCapture() first)")
      return
    }
    let converted: [AudioPCMBuffer] = conversion.withLock { conversion in
      do {
        if conversion == nil || conversion!.hasFailed {
          conversion = try AudioConversion(to: format) { [weak self] fault in self?.report(fault) }
        }
        return conversion!.convert(buffer.timestamp == nil ? buffer.timed(Clock.system.time) : buffer)
      } catch {
        RevueLog.log(.error, "AudioBufferCapturer", "buffer dropped: cannot build the conversion pipeline: \(error)")
        return []
      }
    }
    guard let sink = bufferSink else { return }
    for output in converted { sink.deliver(output) }
  }
}

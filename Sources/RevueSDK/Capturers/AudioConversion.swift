import GStreamer
import Synchronization

/// Converts audio to a track's format with GStreamer's own elements, synchronously on the
/// calling thread: `[pad] ! audioconvert ! audioresample ! capsfilter ! appsink`.
final class AudioConversion: Sendable {
  private let pipeline: MediaPipeline
  private let source: PushedStream
  private let output = AudioSlot()
  private let format: AudioFormat

  /// A chain to `format`; its elements' warnings and errors go to `onFault`.
  init(to format: AudioFormat, onFault: @escaping @Sendable (MediaFault) -> Void) throws {
    self.format = format
    pipeline = MediaPipeline(name: "audio-conversion", onFault: onFault)
    let convert = try Element.make("audioconvert")
    let resample = try Element.make("audioresample")
    let filter = try Element.make("capsfilter")
    try filter.set("caps", format.caps)
    let sink = try Element.make("appsink", as: AppSink.self)
    sink.sync = false
    try sink.set("enable-last-sample", false)
    try pipeline.pipeline.addLinked(convert, resample, filter, sink)
    let output = self.output
    sink.setCallbacks(newSample: { sample in
      if let buffer = sample.buffer { output.values.withLock { $0.append(buffer) } }
    })
    try pipeline.play()
    source = try PushedStream(id: "revue-audio-capture", into: convert.staticPad("sink")!)
  }

  /// Whether an element failed: the chain has stopped, and a new one takes the next buffer.
  var hasFailed: Bool { pipeline.fault != nil }

  /// The buffers the elements gave back for `input` (none while the resampler fills up).
  func convert(_ input: AudioPCMBuffer) -> [AudioPCMBuffer] {
    do {
      try source.push(input.buffer, caps: input.caps)
    } catch {
      RevueLog.log(
        .warning, "AudioBufferCapturer",
        "buffer dropped: GStreamer refused \(input.frameLength) frames at \(input.sampleRate) Hz (\(error))")
    }
    return output.take().compactMap {
      try? AudioPCMBuffer(
        wrapping: $0, sampleRate: format.sampleRate, channelCount: format.channelCount, format: format.sampleFormat)
    }
  }
}

/// The buffers an appsink delivered during a synchronous push.
final class AudioSlot: Sendable {
  let values = Mutex<[Buffer]>([])

  /// The buffers delivered since the last call.
  func take() -> [Buffer] {
    values.withLock { values in
      defer { values.removeAll() }
      return values
    }
  }
}

import GStreamer
import Synchronization

/// Where an audio capturer hands its buffers: the local track that owns it.
protocol AudioBufferSink: AnyObject, Sendable {
  /// Hands a buffer in the track's format to the renderers and publications.
  func deliver(_ buffer: AudioPCMBuffer)
}

/// Produces the audio of a local audio track: the microphone, or audio the App pushes
/// (``AudioBufferCapturer``). The SDK makes capturers; there is no public initializer.
public class AudioCapturer: @unchecked Sendable {
  // Safety (@unchecked): every mutable field is in a Mutex.

  /// A change of the capturer.
  public enum Event: Sendable, Hashable {
    /// The capture state changed.
    case state(CaptureState)
    /// Capture stopped by itself (the microphone was unplugged or failed): why.
    case interrupted(String)
    /// An element of the capture pipeline warned or failed, in GStreamer's words (a failure
    /// also stops capture: ``interrupted(_:)`` follows).
    case fault(MediaFault)
  }

  private let state = Mutex(CaptureState.idle)
  private let broadcast = Broadcast<Event>()
  private let sink = Mutex(WeakAudioSink())

  init() {}

  deinit { broadcast.finish() }

  /// Whether the capturer is capturing. Safe to read from any thread.
  public var captureState: CaptureState { state.withLock { $0 } }

  /// The capturer's changes from now on, in order.
  public var events: AsyncStream<Event> { broadcast.subscribe() }

  /// Starts capturing.
  /// - Throws: ``RevueError`` when capture cannot start.
  public func startCapture() async throws { setCaptureState(.capturing) }

  /// Stops capturing.
  /// - Throws: ``RevueError`` when capture cannot stop cleanly.
  public func stopCapture() async throws { setCaptureState(.idle) }

  func setCaptureState(_ newState: CaptureState) {
    state.withLock { state in
      guard state != newState else { return }
      state = newState
      broadcast.send(.state(newState))
    }
  }

  /// Reports a warning or error of the capture pipeline (logged too).
  func report(_ fault: MediaFault) {
    RevueLog.log(fault.severity == .error ? .error : .warning, String(describing: Self.self), "\(fault)")
    state.withLock { _ in broadcast.send(.fault(fault)) }
  }

  /// Reports that capture stopped by itself, and why, and goes idle.
  func interrupt(reason: String) {
    state.withLock { state in
      broadcast.send(.interrupted(reason))
      guard state != .idle else { return }
      state = .idle
      broadcast.send(.state(.idle))
    }
  }

  /// The track buffers go to.
  var bufferSink: (any AudioBufferSink)? {
    get { sink.withLock { $0.sink } }
    set { sink.withLock { $0.sink = newValue } }
  }
}

/// A weak reference to a capturer's track (the track owns the capturer).
struct WeakAudioSink: @unchecked Sendable {
  // Safety: only read and written under the capturer's mutex; the sink is Sendable.
  weak var sink: (any AudioBufferSink)?
}

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

/// The format of an audio track.
public struct AudioFormat: Sendable, Hashable {
  /// Samples per second.
  public var sampleRate: Int
  /// Channels.
  public var channelCount: Int
  /// The sample format.
  public var sampleFormat: AudioPCMBuffer.Format

  /// A format of `sampleRate` Hz, `channelCount` channels of `sampleFormat` samples.
  public init(sampleRate: Int, channelCount: Int, sampleFormat: AudioPCMBuffer.Format) {
    self.sampleRate = sampleRate
    self.channelCount = channelCount
    self.sampleFormat = sampleFormat
  }

  /// 48 kHz, stereo, 16-bit: what Opus encodes.
  public static let standard = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)

  /// The caps of this format.
  var caps: Caps {
    // The fields are all valid by construction, so the caps always parse.
    try! Caps(
      "audio/x-raw, format=\(sampleFormat.gstreamerName), layout=interleaved, rate=\(sampleRate), channels=\(channelCount)"
    )
  }
}

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

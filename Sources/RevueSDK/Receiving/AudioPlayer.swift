import GStreamer
import Synchronization

/// Plays the audio of the tracks it is added to on this machine's sound output: add it to a
/// ``RemoteAudioTrack`` with `add(audioRenderer:)` to hear a sender.
///
/// Its pipeline is `appsrc ! audioconvert ! audioresample ! sink`, where the sink is PulseAudio's
/// (`pulsesink`), or else ALSA's default device, or an ALSA device by name. The sound card sets the
/// pace: the player keeps at most 200 ms of audio waiting and drops the oldest beyond that, so a
/// sender whose clock runs fast never makes the delay grow.
///
/// When the output fails while playing (the sound server goes away), the player stops:
/// ``state`` says why and ``events`` tells it.
public final class AudioPlayer: AudioRenderer, Sendable {
  private let pipeline: MediaPipeline
  private let status = StreamStatus(name: "the audio player")
  private let source: AppSrc
  private let played = Locked(0)
  private let progress = Broadcast<Int>()

  /// A player on the default sound output (PulseAudio's, or else ALSA's), or on the ALSA
  /// device `alsaDevice` (such as `hw:1,0`, or `null`, which takes audio and discards it).
  /// - Throws: ``RevueError`` when no output can be opened; nothing plays then.
  public init(alsaDevice: String? = nil) throws(RevueError) {
    let sinks = alsaDevice.map { ["alsasink device=\"\($0)\""] } ?? ["pulsesink", "alsasink"]
    var failures: [String] = []
    let status = self.status
    // An output that cannot open says so in the error thrown, not as a fault of the player.
    let opened = Locked(false)
    for sink in sinks {
      var built: MediaPipeline?
      do {
        let pipeline = try MediaPipeline(
          parsing: "appsrc name=source is-live=true format=time max-buffers=10 leaky-type=downstream"
            + " ! audioconvert ! audioresample ! \(sink) name=output sync=false"
        ) { fault in if opened.value.withLock({ $0 }) { status.report(fault) } }
        built = pipeline
        let source = try pipeline.pipeline.element(named: "source", as: AppSrc.self)
        source.caps = AudioFormat.standard.caps
        try pipeline.play()
        opened.value.withLock { $0 = true }
        (self.pipeline, self.source) = (pipeline, source)
        count()
        return
      } catch {
        built?.stop()
        // GStreamer's own words for why the output cannot open, without its debug details.
        if case .stateChangeFailed(_, _, let posted?) = error {
          failures.append("\(sink): \(posted.error.message)")
        } else {
          failures.append("\(sink): \(error)")
        }
      }
    }
    throw RevueError(
      .gstreamer, "no sound output can be opened (\(failures.joined(separator: "; ")))")
  }

  /// Counts the audio frames the output takes.
  private func count() {
    let (played, progress) = (played, progress)
    let bytesPerFrame = AudioFormat.standard.channelCount * AudioFormat.standard.sampleFormat.bytesPerSample
    pipeline.pipeline.element(named: "output")?.staticPad("sink")?.addProbe(.buffer) { _, info in
      let frames = (info.buffer?.size ?? 0) / bytesPerFrame
      progress.send(
        played.value.withLock { total in
          total += frames
          return total
        })
      return .ok
    }
  }

  /// Whether the player plays, failed (its output failed: why), or was stopped.
  public var state: StreamState { status.state }

  /// The player's changes from now on: faults of its output and its end.
  public var events: AsyncStream<StreamEvent> { status.events }

  /// Queues a buffer for the sound output (shared, not copied); called by the track it is added to.
  public func render(pcmBuffer: AudioPCMBuffer) {
    do {
      try source.push(sample: Sample(buffer: pcmBuffer.buffer, caps: pcmBuffer.caps))
    } catch {
      RevueLog.log(.debug, "AudioPlayer", "buffer dropped: the player refused it (\(error))")
    }
  }

  /// Audio frames (samples per channel) the sound output has taken so far.
  public var framesPlayed: Int { played.value.withLock { $0 } }

  /// ``framesPlayed`` each time the output takes a buffer, from now on.
  public func playing() -> AsyncStream<Int> { progress.subscribe(bufferingPolicy: .bufferingNewest(1)) }

  /// Stops playing; buffers rendered afterwards are dropped.
  public func stop() {
    pipeline.stop()
    status.stopped()
    progress.finish()
  }
}

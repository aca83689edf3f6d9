import Synchronization

/// An audio track of this participant: the microphone, or a buffer track.
public final class LocalAudioTrack: AudioTrack, AudioBufferSink, @unchecked Sendable {
  /// The capturer that produces the track's audio.
  public let capturer: AudioCapturer?
  /// The format every buffer of the track has.
  public let format: AudioFormat

  init(name: String, source: Source, capturer: AudioCapturer, format: AudioFormat) {
    self.capturer = capturer
    self.format = format
    super.init(name: name, source: source)
    capturer.bufferSink = self
  }

  /// A track filled with the App's own audio through its ``AudioBufferCapturer``.
  /// - Parameter name: the track's name; `audio_buffer` by default.
  public static func createBufferTrack(name: String = "audio_buffer") -> LocalAudioTrack {
    LocalAudioTrack(
      name: name, source: .unknown, capturer: AudioBufferCapturer(format: .standard), format: .standard)
  }

  /// The microphone's track; the microphone starts with ``LocalParticipant/setMicrophone(enabled:)``.
  /// Its format is 48 kHz 16-bit with the preset's channels: the mono presets are captured and
  /// sent in one channel (``AudioCaptureOptions/Preset/channelCount``).
  /// - Parameters:
  ///   - name: the track's name; `microphone` by default.
  ///   - options: the microphone, preset and voice processing.
  public static func createMicrophoneTrack(
    name: String = "microphone", options: AudioCaptureOptions = AudioCaptureOptions()
  ) -> LocalAudioTrack {
    let format = AudioFormat(sampleRate: 48_000, channelCount: options.preset.channelCount, sampleFormat: .int16)
    return LocalAudioTrack(
      name: name, source: .microphone, capturer: MicrophoneCapturer(options: options, format: format), format: format)
  }

  /// Where the track's audio is sent: its publications' senders, WHIP sessions, RTSP media.
  private let sinks = MediaSinks()
  /// Closed the moment the microphone is switched off: audio still coming from it is held back.
  let gate = DeliveryGate()

  /// Hands a buffer to the renderers and publications, unless muted or switched off.
  func deliver(_ buffer: AudioPCMBuffer) {
    gate.pass { isOpen in
      guard isOpen, !isMuted else { return }
      render(buffer)
      sinks.send(buffer.buffer, caps: format.caps, capturedAt: buffer.timestamp)
    }
  }

  /// Whether a publication sends the track: one of a room's, or a ``WHIPPublication``.
  public var isPublished: Bool { !sinks.isEmpty }

  /// Starts handing every delivered buffer to `sink` (a publication's), and tells it now
  /// whether the track is muted.
  func attach(_ sink: any MediaSink) {
    sinks.attach(sink)
    sink.signal(muted: isMuted)
  }

  /// Tells the publications, whose receivers say it in ``Track/isMuted``.
  override func didChangeMute(_ isMuted: Bool) { sinks.signal(muted: isMuted) }

  /// Stops handing buffers to `sink`.
  func detach(_ sink: any MediaSink) { sinks.detach(sink) }
}

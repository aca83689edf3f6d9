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

  private let senders = Mutex<[RTPSender]>([])
  /// Closed the moment the microphone is switched off: audio still coming from it is held back.
  let gate = DeliveryGate()

  /// Hands a buffer to the renderers and publications, unless muted or switched off.
  func deliver(_ buffer: AudioPCMBuffer) {
    gate.pass { isOpen in
      guard isOpen, !isMuted else { return }
      render(buffer)
      for sender in senders.withLock({ $0 }) {
        sender.send(buffer.buffer, caps: format.caps, capturedAt: buffer.timestamp)
      }
    }
  }

  /// Whether a publication sends the track: one of a room's, or a ``WHIPPublication``.
  public var isPublished: Bool {
    !senders.withLock({ $0.isEmpty }) || renderers.all.contains { $0 is SourceFeed }
  }

  /// Starts handing every delivered buffer to `sender` (a publication's).
  func attach(_ sender: RTPSender) {
    senders.withLock { $0.append(sender) }
    sender.signal(muted: isMuted)
  }

  /// Tells the publications, whose receivers say it in ``Track/isMuted``.
  override func didChangeMute(_ isMuted: Bool) {
    for sender in senders.withLock({ $0 }) { sender.signal(muted: isMuted) }
  }

  /// Stops handing buffers to `sender`.
  func detach(_ sender: RTPSender) { senders.withLock { $0.removeAll { $0 === sender } } }
}

import GStreamer
import Synchronization

/// An audio track received from another host (Opus): decoded buffers, 48 kHz stereo 16-bit, go
/// to its renderers on the receiving thread.
public final class RemoteAudioTrack: AudioTrack, @unchecked Sendable {
  /// What receives the track: an RTP port's receiver, or a WHEP session's audio.
  let receiver: any TrackReceiver

  /// Receives Opus on `port` of `address` under `payloadType`, decrypting SRTP with `srtp` and
  /// taking packets from `source` only, when given; `syncMeter` listens for the sync signal's
  /// beeps. `channels` is the SDP's (`opus/48000/2`), and `stereo` its `sprop-stereo`: whether
  /// the sender sends two channels (nil: not said).
  init(
    name: String, address: String, port: Int, payloadType: Int = RTPPayloadTypes.revueAudio.media,
    channels: Int = 2, stereo: Bool? = nil, latency: Int, srtp: SRTPKey? = nil, source: String? = nil,
    syncMeter: SyncMeter? = nil, leaveTimeout: Duration? = RTPReceiver.leaveTimeout
  ) throws(RevueError) {
    let relay = Relay<RemoteAudioTrack>()
    receiver = try RTPReceiver(
      address: address, port: port, clockRate: 48_000, payloadTypes: RTPPayloadTypes(media: payloadType),
      capsFields: "media=audio,clock-rate=48000,encoding-name=OPUS,payload=\(payloadType)"
        + ",encoding-params=(string)\(channels)" + (stereo.map { ",sprop-stereo=(string)\($0 ? 1 : 0)" } ?? ""),
      decode: Self.decodeChain,
      latency: latency, srtp: srtp, source: source, muted: { relay.target?.setMuted($0) },
      left: { relay.target?.senderLeft(because: $0) }, leaveTimeout: leaveTimeout
    ) { sample, captured in
      guard let pcm = relay.target?.deliver(sample) else { return }
      if let syncMeter, let captured { syncMeter.audio(pcm, captured: captured) }
    }
    super.init(name: name, source: .microphone)
    relay.target = self
    if receiver.isMutedBySender { setMuted(true) }
  }

  /// A track whose audio a WHEP session decodes (to ``format``) and hands to ``deliver(_:)``;
  /// its counters, state and events are `receiver`'s.
  init(name: String, receiver: any TrackReceiver) {
    self.receiver = receiver
    super.init(name: name, source: .microphone)
  }

  /// What the decoders make: 48 kHz stereo 16-bit.
  static let format = AudioFormat.standard

  /// From Opus RTP packets to ``format``, as a `gst-launch` description; a lost packet is
  /// concealed (`plc`).
  static var decodeChain: String {
    "rtpopusdepay ! opusdec plc=true ! audioconvert ! audioresample ! capsfilter caps=\"\(format.caps)\""
  }

  /// Renders a decoded sample (``format``), on the decoding thread; returns its buffer, nil when
  /// the sample holds none.
  @discardableResult
  func deliver(_ sample: Sample) -> AudioPCMBuffer? {
    let format = Self.format
    guard let buffer = sample.buffer,
      let pcm = try? AudioPCMBuffer(
        wrapping: buffer, sampleRate: format.sampleRate, channelCount: format.channelCount,
        format: format.sampleFormat)
    else { return nil }
    render(pcm)
    return pcm
  }

  /// The participant that sends the track, told when its sender mutes it or leaves.
  let participant = Relay<RemoteParticipant>()

  /// The sender left (`reason`: its RTCP BYE, or its silence): the track ends (``state``
  /// `.stopped`), its renderers get nothing more, and the participant is told.
  func senderLeft(because reason: String) {
    RevueLog.log(.info, "Receiver", "\(name): the sender left (\(reason)): the track ends")
    receiver.status.stopped()
    renderers.removeAll()
    participant.target?.trackEnded()
  }

  /// The sender muted or unmuted the track: its events and the participant's delegates are told.
  override func didChangeMute(_ isMuted: Bool) {
    receiver.status.muted(isMuted)
    participant.target?.track(self, didUpdateIsMuted: isMuted)
  }

  /// The receiver's counters now (`framesDecoded` counts decoded buffers).
  public var statistics: RemoteVideoTrack.Statistics { receiver.statistics }

  /// Whether the track is being received, failed (its decoder or socket failed: why), or was stopped.
  public var state: StreamState { receiver.status.state }

  /// The track's changes from now on: faults of its pipeline and its end.
  public var events: AsyncStream<StreamEvent> { receiver.status.events }
}

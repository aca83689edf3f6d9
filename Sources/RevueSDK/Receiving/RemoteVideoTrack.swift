import GStreamer
import Synchronization

/// A video track received from another host: decoded frames go to its renderers, on the
/// receiving thread.
public final class RemoteVideoTrack: VideoTrack, @unchecked Sendable {
  /// What the receiver has seen of the stream.
  public struct Statistics: Sendable, Hashable {
    /// Frames decoded and handed to the renderers.
    public var framesDecoded: Int
    /// RTP packets received.
    public var packetsReceived: Int
    /// RTP bytes received (headers included).
    public var bytesReceived: Int
    /// Packets that were not RTP (garbage on the port), counted and dropped.
    public var invalidPackets: Int
    /// SRTP and SRTCP packets dropped unauthenticated: they failed authentication (sent with
    /// another key, or changed on the way), could not be decrypted, or were replayed; or, in a
    /// flood of new SSRCs, they were not let in to try. 0 for a plain RTP receiver.
    public var packetsUnauthenticated = 0
    /// RTP and RTCP packets from another host than the one the receiver takes packets from
    /// (`from:`), dropped. 0 when the receiver takes packets from anyone.
    public var packetsFromOtherSources = 0
    /// RTP and RTCP packets dropped because they were not the followed sender's: another SSRC
    /// or another address while the sender followed is live (a second sender on the port, or a
    /// stranger using its SSRC). A sender silent for a quarter second is no longer followed: the
    /// next one takes over.
    public var packetsFromOtherSenders = 0
    /// Packets the jitter buffer gave up on.
    public var packetsLost: Int
    /// Missing packets asked for again (RTCP NACK), retries included.
    public var nacksSent: Int
    /// Retransmitted packets (RTX) that came in answer to a NACK, copies of one packet
    /// included: each of the four copies of a first NACK (three of a retry) that arrives brings one.
    public var packetsRetransmitted: Int
    /// Missing packets rebuilt from FEC packets.
    public var packetsRecovered: Int
    /// Keyframes asked for (RTCP PLI), after a loss that could not be recovered.
    public var keyframeRequests: Int
    /// Packets that came too late to be used, and were dropped.
    public var packetsLate: Int
    /// The jitter buffer's average jitter.
    public var jitter: Duration
    /// Bits per second since the previous read of the statistics (or since the start).
    public var bitrate: Double
    /// Frames that arrived but never left the decoder (incomplete, or undecodable until the
    /// next keyframe).
    public var framesDropped: Int
    /// The mean time, over the frames decoded since the previous read of the statistics, from
    /// the frame's capture at the sender to it leaving this decoder: the sender's wall-clock
    /// time of the frame (from the RTP timestamp and the RTCP sender reports) against this
    /// machine's at decoding. Exact on one machine; across machines it is off by the difference
    /// of their clocks. Nil before the first sender report, when no frame came, or when the
    /// sender's reports put its frames later than their decoding. A sender whose reports map
    /// send time rather than capture time (rtpbin's default, which adds the encoder's latency:
    /// 15–20 ms for `x264enc`) reads that much short, or nil; Revue's senders map capture time.
    public var latency: Duration?
  }

  /// The codec of the stream. For a WHEP stream (``Room/watch(whep:token:timeout:)``), the one
  /// its packets are in: an answer may list several codecs and the server send any of them.
  public var codec: VideoCodec { received.withLock { $0 } }
  /// The codec the stream is received in now.
  private let received: Mutex<VideoCodec>

  /// Notes that the stream's packets are in `codec` (a WHEP stream's, once its first comes).
  func receives(_ codec: VideoCodec) { received.withLock { $0 = codec } }
  /// What receives the track: an RTP port's receiver, or a WHEP session's video.
  let receiver: any TrackReceiver
  private let last = Mutex<PixelBuffer?>(nil)

  /// Receives `codec` on `port` of `address` under `payloadTypes`, recovering lost packets as
  /// `recovery` says, decrypting SRTP with `srtp` and taking packets from `source` only, when
  /// given; `syncMeter` looks for the sync signal's flashes.
  init(
    name: String, codec: VideoCodec, address: String, port: Int, payloadTypes: RTPPayloadTypes = .revueVideo,
    latency: Int, recovery: LossRecovery = .nack, srtp: SRTPKey? = nil, source: String? = nil,
    syncMeter: SyncMeter? = nil, leaveTimeout: Duration? = RTPReceiver.leaveTimeout
  ) throws(RevueError) {
    received = Mutex(codec)
    let relay = Relay<RemoteVideoTrack>()
    receiver = try RTPReceiver(
      address: address, port: port, clockRate: 90_000, payloadTypes: payloadTypes,
      capsFields: "media=video,clock-rate=90000,encoding-name=\(codec.encodingName)"
        + ",payload=\(payloadTypes.media),rtcp-fb-nack-pli=(boolean)true,rtcp-fb-ccm-fir=(boolean)true",
      decode: Self.decodeChain(codec), latency: latency, recovery: recovery,
      srtp: srtp, source: source, muted: { relay.target?.setMuted($0) },
      ended: { relay.target?.clearRenderers() }, left: { relay.target?.senderLeft(because: $0) },
      leaveTimeout: leaveTimeout
    ) { sample, captured in
      guard let frame = relay.target?.deliver(sample), let syncMeter, let captured else { return }
      syncMeter.video(frame, captured: captured)
    }
    super.init(name: name, source: .camera)
    relay.target = self
    // A report that said so before the relay was set.
    if receiver.isMutedBySender { setMuted(true) }
  }

  /// From RTP packets of `codec` to I420 pictures, as a `gst-launch` description: the decoder
  /// is named `decoder`. After a loss the depayloader asks for a keyframe (RTCP PLI) and passes
  /// nothing on until it comes, so that a decoder never shows a picture built on a missing
  /// packet.
  static func decodeChain(_ codec: VideoCodec) -> String {
    let depay = "request-keyframe=true wait-for-keyframe=true"
    let decode =
      switch codec {
      case .vp8: "rtpvp8depay \(depay) ! vp8dec name=decoder"
      case .h264: "rtph264depay \(depay) ! h264parse ! avdec_h264 name=decoder"
      }
    return "\(decode) ! videoconvert ! video/x-raw,format=I420"
  }

  /// A track of `codec` whose frames a WHEP session decodes and hands to ``deliver(_:)``; its
  /// counters, state and events are `receiver`'s.
  init(name: String, codec: VideoCodec, receiver: any TrackReceiver) {
    received = Mutex(codec)
    self.receiver = receiver
    super.init(name: name, source: .camera)
  }

  /// The size each view showing the track shows it at (nil: a view that does not count), and
  /// the size last asked of the sender (nil: its own choice).
  private let shown = Mutex<(sizes: [ObjectIdentifier: Dimensions?], asked: Dimensions??)>(([:], nil))

  /// The adaptive stream (seed 001): notes that `view` shows the track at `size` in pixels (nil:
  /// the view does not count: not laid out, hidden or disabled), or no longer shows it
  /// (`showing` false), and asks the sender for the smallest layer that covers every counted
  /// view (``TrackReceiver/adapt(to:)``): the largest width and height asked; the smallest
  /// layer when views show the track and none counts; the sender's own choice when no view
  /// shows it (a custom renderer takes what comes). Only a sender that offers layers (a
  /// simulcast WHEP broadcast) changes what it sends.
  func adaptiveStream(view: ObjectIdentifier, size: Dimensions?, showing: Bool = true) {
    let ask: Dimensions?? = shown.withLock { shown in
      shown.sizes[view] = showing ? .some(size) : nil
      let wanted: Dimensions?
      if shown.sizes.isEmpty {
        wanted = nil
      } else {
        let counted = shown.sizes.values.compactMap { $0 }
        wanted =
          counted.isEmpty
          ? Dimensions(width: 1, height: 1)
          : Dimensions(width: counted.map(\.width).max()!, height: counted.map(\.height).max()!)
      }
      guard shown.asked.map({ $0 != wanted }) ?? true else { return .none }
      shown.asked = .some(wanted)
      return .some(wanted)
    }
    if case .some(let wanted) = ask { receiver.adapt(to: wanted) }
  }

  /// The participant that sends the track, told when its sender mutes it or leaves.
  let participant = Relay<RemoteParticipant>()

  /// The sender left (`reason`: its RTCP BYE, or its silence): the track ends (``state``
  /// `.stopped`), the views showing it clear and let go of it, and the participant is told.
  func senderLeft(because reason: String) {
    RevueLog.log(.info, "Receiver", "\(name): the sender left (\(reason)): the track ends")
    receiver.status.stopped()
    release()
    participant.target?.trackEnded()
  }

  /// The sender muted the track (or turned its camera off), or unmuted it: views clear (as they
  /// do when the track stops) and show nothing while it is muted (custom renderers get what comes, such as the sender's
  /// placeholder); the track's events and the participant's delegates are told.
  override func didChangeMute(_ isMuted: Bool) {
    if isMuted { clearRenderers() }
    receiver.status.muted(isMuted)
    participant.target?.track(self, didUpdateIsMuted: isMuted)
  }

  /// Adds a renderer; a view added while the track is muted starts empty.
  public override func add(videoRenderer: any VideoRenderer) {
    super.add(videoRenderer: videoRenderer)
    if isMuted, let view = videoRenderer as? any ClearingRenderer { view.clearPicture() }
  }

  /// Renders a decoded sample (I420), on the decoding thread; returns its frame, nil when the
  /// sample is not a picture.
  @discardableResult
  func deliver(_ sample: Sample) -> PixelBuffer? {
    guard let buffer = sample.buffer, let structure = sample.caps?.structure(at: 0),
      let width = structure.get("width", as: Int.self), let height = structure.get("height", as: Int.self),
      let frame = try? PixelBuffer(wrapping: buffer, width: width, height: height, format: .i420)
    else { return nil }
    last.withLock { $0 = frame }
    if isMuted {
      for renderer in renderers.all where !(renderer is any ClearingRenderer) { renderer.render(pixelBuffer: frame) }
    } else {
      render(frame)
    }
    return frame
  }

  /// The receiver's counters now.
  public var statistics: Statistics { receiver.statistics }

  /// Whether the track is being received, failed (its decoder or socket failed: why), or was stopped.
  public var state: StreamState { receiver.status.state }

  /// The track's changes from now on: faults of its pipeline (GStreamer's text and the
  /// element's path) and its end.
  public var events: AsyncStream<StreamEvent> { receiver.status.events }

  /// The frame rendered last, if any (for snapshots).
  public var lastFrame: PixelBuffer? { last.withLock { $0 } }
}

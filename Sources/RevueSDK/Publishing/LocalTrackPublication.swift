import Foundation
import Synchronization

/// A local track sent to the room's destination: its RTP/RTCP ports, codec and statistics.
public final class LocalTrackPublication: Sendable {
  /// What a publication has sent.
  public struct Statistics: Sendable, Hashable {
    /// Frames the encoder produced.
    public var framesEncoded: Int
    /// Of those, keyframes.
    public var keyframes: Int
    /// RTP packets sent.
    public var packetsSent: Int
    /// RTP bytes sent (headers included).
    public var bytesSent: Int
    /// Bits per second since the previous read of the statistics (or since the start).
    public var bitrate: Double
    /// What the latest RTCP receiver report said: the fraction lost since the one before (0…1).
    public var fractionLost: Double?
    /// Packets the receiver lost since the start, by its latest report.
    public var packetsLost: Int?
    /// The receiver's interarrival jitter, by its latest report.
    public var jitter: Duration?
    /// The round-trip time from the latest receiver report that answered a sender report.
    public var roundTripTime: Duration?
  }

  /// The publication's id.
  public let sid: String
  /// What a publication sends.
  enum Media: Sendable, Hashable {
    case video(VideoCodec, VideoEncoding)
    case audio(AudioEncoding, dtx: Bool)
  }

  /// The track published: a ``LocalVideoTrack`` or a ``LocalAudioTrack``.
  public let track: Track
  let media: Media
  /// The video codec (nil for audio, which is Opus).
  public var codec: VideoCodec? {
    if case .video(let codec, _) = media { return codec }
    return nil
  }
  /// The video encoding sent (nil for audio).
  public var encoding: VideoEncoding? {
    if case .video(_, let encoding) = media { return encoding }
    return nil
  }
  /// The audio encoding sent (nil for video).
  public var audioEncoding: AudioEncoding? {
    if case .audio(let encoding, _) = media { return encoding }
    return nil
  }
  /// The destination's RTP port (RTCP is the next one).
  public let port: Int
  /// The RTP synchronization source of the stream.
  public var ssrc: UInt32 { sender.ssrc }
  /// The local port the publication sends RTCP from and takes receiver reports on.
  public var localRTCPPort: Int { sender.rtcpPort }
  /// The RTP payload type.
  public var payloadType: Int { sender.payloadType }

  let sender: RTPSender
  private let lastRead = Mutex((bytes: 0, time: ContinuousClock.now))

  init(video track: LocalVideoTrack, codec: VideoCodec, encoding: VideoEncoding, host: String, port: Int)
    throws(RevueError)
  {
    sid = Self.newSID()
    self.track = track
    media = .video(codec, encoding)
    self.port = port
    sender = try RTPSender(codec: codec, encoding: encoding, host: host, port: port)
    track.attach(sender)
  }

  init(audio track: LocalAudioTrack, encoding: AudioEncoding, dtx: Bool, host: String, port: Int) throws(RevueError) {
    sid = Self.newSID()
    self.track = track
    media = .audio(encoding, dtx: dtx)
    self.port = port
    sender = try RTPSender(
      name: "opus",
      chain: "audioconvert ! audioresample ! opusenc name=encoder bitrate=\(encoding.maxBitrate) inband-fec=true"
        + " packet-loss-percentage=10 dtx=\(dtx) frame-size=20 ! rtpopuspay name=payloader",
      payloadType: 111, host: host, port: port)
    track.attach(sender)
  }

  private static func newSID() -> String {
    "PU_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12)
  }

  /// The counters now, and the bitrate since the previous read.
  public var statistics: Statistics {
    let counters = sender.statistics
    let now = ContinuousClock.now
    let bitrate = lastRead.withLock { last in
      let elapsed = now - last.time
      let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
      defer { last = (counters.bytesSent, now) }
      return seconds > 0 ? Double(counters.bytesSent - last.bytes) * 8 / seconds : 0
    }
    return Statistics(
      framesEncoded: counters.framesEncoded, keyframes: counters.keyframes, packetsSent: counters.packetsSent,
      bytesSent: counters.bytesSent, bitrate: bitrate, fractionLost: counters.report?.fractionLost,
      packetsLost: counters.report.map { Int($0.packetsLost) },
      jitter: counters.report.map { .microseconds(Int64($0.jitter) * 1_000_000 / 90_000) },
      roundTripTime: counters.roundTrip)
  }

  /// Stops sending.
  func stop() {
    (track as? LocalVideoTrack)?.detach(sender)
    (track as? LocalAudioTrack)?.detach(sender)
    sender.stop()
  }

  /// The SDP media section a receiver opens for this publication.
  func sdpMedia() -> String {
    var lines: [String]
    switch media {
    case .video(let codec, let encoding):
      lines = [
        "m=video \(port) RTP/AVPF \(payloadType)", "a=rtpmap:\(payloadType) \(codec.encodingName)/90000",
        "a=rtcp-fb:\(payloadType) nack pli", "a=rtcp-fb:\(payloadType) ccm fir", "a=framerate:\(encoding.maxFps)",
      ]
      if codec == .h264 { lines.insert("a=fmtp:\(payloadType) packetization-mode=1;profile-level-id=42e01f", at: 2) }
    case .audio(_, let dtx):
      lines = [
        "m=audio \(port) RTP/AVPF \(payloadType)", "a=rtpmap:\(payloadType) opus/48000/2",
        "a=fmtp:\(payloadType) useinbandfec=1;usedtx=\(dtx ? 1 : 0)",
      ]
    }
    lines += ["a=rtcp:\(port + 1)", "a=ssrc:\(ssrc) cname:\(Self.cname)", "a=sendonly"]
    return lines.joined(separator: "\r\n")
  }

  /// The RTCP CNAME of this process's streams.
  static let cname = "revue-\(ProcessInfo.processInfo.processIdentifier)@\(ProcessInfo.processInfo.hostName)"
}

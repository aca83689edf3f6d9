import Foundation
import Synchronization

/// A session: the local participant and where its publications go.
///
/// `connect(to: URL("rtp://HOST:PORT"))` sends plain RTP/RTCP over UDP: one port pair per
/// published track from PORT upward (RTP on the even port, RTCP on the next). ``sdp`` describes
/// the streams for a receiver (GStreamer, ffmpeg, VLC).
public final class Room: Sendable {
  /// The process's shared room.
  public static let shared = Room()

  /// This process's participant: its camera, microphone and buffer tracks.
  public let localParticipant: LocalParticipant?

  struct Destination: Sendable, Hashable {
    /// The numeric address packets go to.
    var address: String
    var port: Int
  }

  private let state = Mutex<(destination: Destination?, publications: [LocalTrackPublication])>((nil, []))
  private let remotes = Mutex<[String: RemoteParticipant]>([:])

  /// A room of its own, with a local participant.
  public init() {
    let participant = LocalParticipant()
    localParticipant = participant
    participant.room = WeakRoom(room: self)
  }

  /// Sets where publications are sent: `rtp://HOST:PORT`.
  /// - Throws: ``RevueError`` (`.invalidInput`) for another scheme, a missing or odd port, or a
  ///   host that does not resolve; nothing changes then.
  public func connect(to url: URL) async throws {
    guard url.scheme == "rtp" else {
      throw RevueError(.invalidInput, "unsupported URL '\(url.absoluteString)': use rtp://HOST:PORT")
    }
    guard let host = url.host, !host.isEmpty else {
      throw RevueError(.invalidInput, "URL '\(url.absoluteString)' has no host: use rtp://HOST:PORT")
    }
    guard let port = url.port, port > 0, port < 65_534, port % 2 == 0 else {
      throw RevueError(
        .invalidInput, "URL '\(url.absoluteString)' needs an even port below 65534 (RTP on it, RTCP on the next)")
    }
    let address = try Self.resolve(host)
    state.withLock { $0.destination = Destination(address: address, port: port) }
  }

  /// The SDP a receiver opens to play the published streams.
  public var sdp: String {
    let (destination, publications) = state.withLock { ($0.destination, $0.publications) }
    let address = destination?.address ?? "127.0.0.1"
    var lines = [
      "v=0", "o=- \(UInt32.random(in: 1..<UInt32.max)) 1 IN IP4 \(address)", "s=Revue", "c=IN IP4 \(address)", "t=0 0",
    ]
    lines += publications.flatMap { $0.sdpMedia() }
    return lines.joined(separator: "\r\n") + "\r\n"
  }

  /// How long, in milliseconds, a video receiver waits for a missing packet (the jitter buffer's
  /// latency) by default: three rounds of NACK and retransmission on a path with a round trip
  /// up to 80 ms (at 200 ms, one packet in a thousand through 5% loss each way was given up,
  /// and its frame cost a keyframe). Packets that come in order are passed on at once, so it
  /// costs no delay while nothing is lost.
  public static let defaultLatency = 300

  /// How long an audio receiver waits for a missing packet at most, in milliseconds: audio is not
  /// retransmitted (Opus carries its own redundancy), so waiting longer only delays the sound
  /// after a loss.
  static let audioLatency = 50

  /// Receives a stream on `rtp://ADDRESS:PORT` (RTP on PORT, RTCP on PORT + 1); each sender
  /// becomes a ``RemoteParticipant``.
  /// - Parameters:
  ///   - codec: the stream's codec (`?codec=h264` in the URL also says it); VP8 by default.
  ///   - latency: how long a missing packet is waited for, in milliseconds (the jitter buffer's
  ///     latency).
  ///   - lossRecovery: how lost packets are recovered: NACK asks a sender that retransmits
  ///     (RTX on payload type 97, as Revue's senders do); FEC decodes ULPFEC on payload type 122.
  /// - Returns: the participant of the stream.
  /// - Throws: ``RevueError`` for a malformed URL or a port that cannot be bound; nothing starts then.
  @discardableResult
  public func listen(
    on url: URL, codec: VideoCodec? = nil, latency: Int = Room.defaultLatency, lossRecovery: LossRecovery = .nack
  ) async throws -> RemoteParticipant {
    guard url.scheme == "rtp", let host = url.host, let port = url.port, port > 0, port < 65_535 else {
      throw RevueError(.invalidInput, "cannot listen on '\(url.absoluteString)': use rtp://ADDRESS:PORT")
    }
    let named = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "codec" }?.value
    let chosen =
      try codec ?? named.map { name throws(RevueError) in
        guard let codec = VideoCodec(rawValue: name) else {
          throw RevueError(.invalidInput, "unknown codec '\(name)' (vp8 or h264)")
        }
        return codec
      } ?? .vp8
    let address = try Self.resolve(host)
    let track = try RemoteVideoTrack(
      name: "video", codec: chosen, address: address, port: port, latency: latency, recovery: lossRecovery)
    let participant = RemoteParticipant(videoTrack: track, audioTrack: nil)
    remotes.withLock { $0["rtp:\(port)"] = participant }
    return participant
  }

  /// Receives the streams an SDP describes (its `m=video` and `m=audio` sections: VP8, H.264
  /// and Opus), on `address`.
  /// - Parameters:
  ///   - latency: how long a missing video packet is waited for, in milliseconds (audio waits
  ///     50 ms at most).
  ///   - lossRecovery: the loss recovery used, of what the SDP offers (`rtx` with `apt=96` on
  ///     payload type 97 for NACK, `ulpfec` on 122 for FEC).
  ///   - measuresAVSync: whether the participant measures the lip sync of a stream
  ///     that carries the sync test signal (``RemoteParticipant/avSyncMilliseconds``): it reads
  ///     64 pixels of every frame and every audio sample.
  /// - Returns: the participant whose tracks they are.
  /// - Throws: ``RevueError`` naming the SDP line that is malformed or unsupported, or a port
  ///   that cannot be bound; nothing is received then.
  @discardableResult
  public func listen(
    sdp: String, on address: String = "0.0.0.0", latency: Int = Room.defaultLatency,
    lossRecovery: LossRecovery = [.nack, .fec], measuresAVSync: Bool = false
  ) async throws -> RemoteParticipant {
    let media = try SDPMedia.parse(sdp)
    let resolved = try Self.resolve(address)
    let meter = measuresAVSync ? SyncMeter() : nil
    var video: RemoteVideoTrack?
    var audio: RemoteAudioTrack?
    for section in media {
      switch section.kind {
      case .video(let codec):
        guard video == nil else { continue }
        video = try RemoteVideoTrack(
          name: "video", codec: codec, address: resolved, port: section.port, latency: latency,
          recovery: section.recovery.intersection(lossRecovery), syncMeter: meter)
      case .opus:
        guard audio == nil else { continue }
        audio = try RemoteAudioTrack(
          name: "audio", address: resolved, port: section.port, latency: min(latency, Self.audioLatency),
          syncMeter: meter)
      }
    }
    let participant = RemoteParticipant(videoTrack: video, audioTrack: audio, syncMeter: meter)
    remotes.withLock { $0["sdp:\(media.first?.port ?? 0)"] = participant }
    return participant
  }

  /// The senders received, by the key their stream was opened with.
  public var remoteParticipants: [String: RemoteParticipant] { remotes.withLock { $0 } }

  /// Stops receiving every stream.
  public func disconnect() async {
    let all = remotes.withLock { remotes in
      defer { remotes.removeAll() }
      return Array(remotes.values)
    }
    for participant in all { participant.stop() }
    for publication in publications { unpublish(publication) }
  }

  /// The publications, in the order they were made.
  public var publications: [LocalTrackPublication] { state.withLock { $0.publications } }

  /// Publishes `track` on the first free port pairs: one per stream (one per simulcast layer).
  func publish(_ track: LocalVideoTrack, options: VideoPublishOptions) throws(RevueError) -> LocalTrackPublication {
    let size =
      track.capturer?.dimensions ?? (track.capturer as? CameraCapturer)?.options.dimensions ?? .h720_169
    let layers = options.layers(for: size)
    return try add(pairs: layers.count) { host, port throws(RevueError) in
      try LocalTrackPublication(
        video: track, codec: options.preferredCodec, layers: layers, recovery: options.lossRecovery, host: host,
        port: port, adaptiveBitrate: options.adaptiveBitrate)
    }
  }

  /// Publishes an audio track (Opus) on the first free port pair.
  func publish(_ track: LocalAudioTrack, options: AudioPublishOptions) throws(RevueError) -> LocalTrackPublication {
    let preset = (track.capturer as? MicrophoneCapturer).map { AudioEncoding(maxBitrate: $0.options.preset.bitrate) }
    return try add(pairs: 1) { host, port throws(RevueError) in
      try LocalTrackPublication(
        audio: track, encoding: options.encoding ?? preset ?? .presetMusic, dtx: options.dtx, host: host, port: port)
    }
  }

  /// Makes a publication on the first `pairs` consecutive port pairs from the destination's port
  /// that no publication uses, and keeps it.
  private func add(
    pairs: Int, _ make: (_ host: String, _ port: Int) throws(RevueError) -> LocalTrackPublication
  ) throws(RevueError) -> LocalTrackPublication {
    // Under the lock, so that two publications made at once never take the same ports.
    try state.withLock { state throws(RevueError) in
      guard let destination = state.destination else {
        throw RevueError(.invalidState, "connect the room first: room.connect(to: URL(string: \"rtp://HOST:PORT\")!)")
      }
      let used = Set(state.publications.flatMap(\.ports))
      var port = destination.port
      while (0..<pairs).contains(where: { used.contains(port + 2 * $0) }) { port += 2 }
      guard port + 2 * pairs <= 65_536 else {
        throw RevueError(.invalidInput, "no free port pair is left above \(destination.port)")
      }
      let publication = try make(destination.address, port)
      state.publications.append(publication)
      return publication
    }
  }

  /// Stops a publication.
  func unpublish(_ publication: LocalTrackPublication) {
    publication.stop()
    state.withLock { $0.publications.removeAll { $0 === publication } }
  }

  /// The numeric IPv4 address of `host`.
  private static func resolve(_ host: String) throws(RevueError) -> String {
    var hints = addrinfo()
    hints.ai_family = AF_INET
    hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
    var result: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, nil, &hints, &result)
    defer { if let result { freeaddrinfo(result) } }
    guard status == 0, let info = result, let address = info.pointee.ai_addr else {
      throw RevueError(.invalidInput, "cannot resolve host '\(host)': \(String(cString: gai_strerror(status)))")
    }
    var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
      var raw = ipv4.pointee.sin_addr
      _ = inet_ntop(AF_INET, &raw, &text, socklen_t(INET_ADDRSTRLEN))
    }
    return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}

/// The participant's weak reference to its room (the room owns the participant).
struct WeakRoom: @unchecked Sendable {
  // Safety: written once, in the room's initializer, before the participant is shared.
  weak var room: Room?
}

/// The media sections of an SDP that Revue receives.
struct SDPMedia: Sendable, Hashable {
  enum Kind: Sendable, Hashable {
    case video(VideoCodec)
    case opus
  }

  var kind: Kind
  var port: Int
  /// The loss recovery the section offers: RTX for payload type 96 on 97, ULPFEC on 122.
  var recovery: LossRecovery = []

  /// The sections of `sdp`, in order.
  /// - Throws: ``RevueError`` naming the line of a malformed media line or an unsupported codec.
  static func parse(_ sdp: String) throws(RevueError) -> [SDPMedia] {
    var sections: [(media: String, port: Int, line: Int, codec: String?, recovery: LossRecovery)] = []
    for (index, raw) in sdp.split(whereSeparator: \.isNewline).enumerated() {
      let line = raw.trimmingCharacters(in: .whitespaces)
      if line.hasPrefix("m=") {
        let fields = line.dropFirst(2).split(separator: " ")
        guard fields.count >= 4, let port = Int(fields[1]), port > 0, port < 65_535 else {
          throw RevueError(.invalidInput, "SDP line \(index + 1): malformed media line '\(line)'")
        }
        sections.append((String(fields[0]), port, index + 1, nil, []))
      } else if line == "a=fmtp:\(LossRecovery.rtxPayloadType) apt=96", !sections.isEmpty {
        sections[sections.count - 1].recovery.insert(.nack)
      } else if line.lowercased() == "a=rtpmap:\(LossRecovery.fecPayloadType) ulpfec/90000", !sections.isEmpty {
        sections[sections.count - 1].recovery.insert(.fec)
      } else if line.hasPrefix("a=rtpmap:"), !sections.isEmpty, sections[sections.count - 1].codec == nil {
        let name = line.split(separator: " ").dropFirst().first?.split(separator: "/").first.map(String.init)
        sections[sections.count - 1].codec = name?.uppercased()
      }
    }
    guard !sections.isEmpty else { throw RevueError(.invalidInput, "the SDP has no media line ('m=video …')") }
    var media: [SDPMedia] = []
    for section in sections {
      switch (section.media, section.codec) {
      case ("video", "VP8"?): media.append(SDPMedia(kind: .video(.vp8), port: section.port, recovery: section.recovery))
      case ("video", "H264"?):
        media.append(SDPMedia(kind: .video(.h264), port: section.port, recovery: section.recovery))
      case ("audio", "OPUS"?): media.append(SDPMedia(kind: .opus, port: section.port))
      default:
        throw RevueError(
          .invalidInput,
          "SDP line \(section.line): \(section.media) in \(section.codec ?? "no rtpmap") is not received (VP8, H264 or opus)"
        )
      }
    }
    return media
  }
}

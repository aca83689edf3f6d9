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
    lines += publications.map { $0.sdpMedia() }
    return lines.joined(separator: "\r\n") + "\r\n"
  }

  /// Receives a stream on `rtp://ADDRESS:PORT` (RTP on PORT, RTCP on PORT + 1); each sender
  /// becomes a ``RemoteParticipant``.
  /// - Parameters:
  ///   - codec: the stream's codec (`?codec=h264` in the URL also says it); VP8 by default.
  ///   - latency: the jitter buffer's latency in milliseconds.
  /// - Returns: the participant of the stream.
  /// - Throws: ``RevueError`` for a malformed URL or a port that cannot be bound; nothing starts then.
  @discardableResult
  public func listen(on url: URL, codec: VideoCodec? = nil, latency: Int = 50) async throws -> RemoteParticipant {
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
    let frames = FrameRelay()
    let receiver = try VideoReceiver(address: address, port: port, codec: chosen, latency: latency) {
      frames.deliver($0)
    }
    let track = RemoteVideoTrack(name: "video", codec: chosen, receiver: receiver)
    frames.track.withLock { $0 = WeakVideoTrack(track: track) }
    let participant = RemoteParticipant(videoTrack: track)
    remotes.withLock { $0["rtp:\(port)"] = participant }
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
    for participant in all { participant.videoTrack.receiver.stop() }
    for publication in publications { unpublish(publication) }
  }

  /// The publications, in the order they were made.
  public var publications: [LocalTrackPublication] { state.withLock { $0.publications } }

  /// Publishes `track` on the next free port pair.
  func publish(_ track: LocalVideoTrack, options: VideoPublishOptions) throws(RevueError) -> LocalTrackPublication {
    guard let destination = state.withLock({ $0.destination }) else {
      throw RevueError(.invalidState, "connect the room first: room.connect(to: URL(string: \"rtp://HOST:PORT\")!)")
    }
    let port = destination.port + 2 * state.withLock { $0.publications.count }
    let size =
      track.capturer?.dimensions ?? (track.capturer as? CameraCapturer)?.options.dimensions ?? .h720_169
    let encoding = options.encoding ?? VideoEncoding.forDimensions(size)
    let publication = try LocalTrackPublication(
      video: track, codec: options.preferredCodec, encoding: encoding, host: destination.address, port: port)
    state.withLock { $0.publications.append(publication) }
    return publication
  }

  /// Publishes an audio track (Opus) on the next free port pair.
  func publish(_ track: LocalAudioTrack, options: AudioPublishOptions) throws(RevueError) -> LocalTrackPublication {
    guard let destination = state.withLock({ $0.destination }) else {
      throw RevueError(.invalidState, "connect the room first: room.connect(to: URL(string: \"rtp://HOST:PORT\")!)")
    }
    let port = destination.port + 2 * state.withLock { $0.publications.count }
    let preset = (track.capturer as? MicrophoneCapturer).map { AudioEncoding(maxBitrate: $0.options.preset.bitrate) }
    let publication = try LocalTrackPublication(
      audio: track, encoding: options.encoding ?? preset ?? .presetMusic, dtx: options.dtx,
      host: destination.address, port: port)
    state.withLock { $0.publications.append(publication) }
    return publication
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

/// Hands a receiver's frames to its track, which is made after the receiver.
final class FrameRelay: Sendable {
  let track = Mutex(WeakVideoTrack(track: nil))
  func deliver(_ frame: PixelBuffer) { track.withLock { $0.track }?.render(frame) }
}

/// A weak reference to a remote track (the track owns its receiver).
struct WeakVideoTrack: @unchecked Sendable {
  // Safety: only read and written under a Mutex.
  weak var track: RemoteVideoTrack?
}

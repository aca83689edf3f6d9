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
      track: track, codec: options.preferredCodec, encoding: encoding, host: destination.address, port: port)
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

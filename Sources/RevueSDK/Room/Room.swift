import Foundation
import Synchronization

/// A session: the local participant and where its publications go.
///
/// `connect(to: URL("rtp://HOST:PORT"))` sends plain RTP/RTCP over UDP: one port pair per
/// published track from PORT upward (RTP on the even port, RTCP on the next);
/// `srtp://HOST:PORT?key=BASE64` sends SRTP and SRTCP with that key. ``sdp`` describes the
/// streams for a receiver (GStreamer, ffmpeg, VLC), with the key in `a=crypto` for SRTP.
/// `whip+https://HOST/PATH` publishes to a WHIP endpoint (RFC 9725) of an SFU or a media server:
/// each publication is a WebRTC session of its own (``WHIPPublication`` sends a video and an
/// audio track in one).
public final class Room: Sendable {
  /// The process's shared room.
  public static let shared = Room()

  /// This process's participant: its camera, microphone and buffer tracks.
  public let localParticipant: LocalParticipant?

  /// Where publications go.
  enum Destination: Sendable, Hashable {
    /// RTP to a numeric address, one port pair per stream from `port` upward; SRTP when a
    /// `key` protects every publication.
    case rtp(address: String, port: Int, key: SRTPKey?)
    /// A WHIP session at `endpoint` for each publication.
    case whip(endpoint: URL, token: String?, timeout: Duration)
  }

  /// How ``Room/connect(to:options:)`` connects.
  public struct ConnectOptions: Sendable, Hashable {
    /// The bearer token a WHIP endpoint wants (`Authorization: Bearer`), if any; not used by RTP.
    public var token: String?
    /// How long each step of a WHIP publication may take: the track's first frame, the HTTP
    /// exchange, the connection (ICE and DTLS).
    public var timeout: Duration

    /// Options with a WHIP endpoint's `token` and a step's `timeout`.
    public init(token: String? = nil, timeout: Duration = .seconds(10)) {
      self.token = token
      self.timeout = timeout
    }
  }

  private let state = Mutex<(destination: Destination?, publications: [LocalTrackPublication])>((nil, []))
  private let broadcast = Broadcast<Event>()

  /// What happened to the room's publications.
  public enum Event: Sendable, Hashable {
    /// The publication of this ``LocalTrackPublication/sid`` changed state or had a fault (an
    /// encoder that fails, a WHIP session its endpoint dropped): its own ``LocalTrackPublication/events``,
    /// for code that watches the room rather than each publication.
    case publication(sid: String, StreamEvent)
  }

  /// The events of every publication the room makes from now on, until each stops or fails; the
  /// latest 64 wait for a consumer that is behind.
  public var events: AsyncStream<Event> { broadcast.subscribe(bufferingPolicy: .bufferingNewest(64)) }
  private let statisticsFlag = Atomic(true)

  /// Seed 000's switch for the statistics of every track, on by default. Setting it is a no-op:
  /// Revue does no periodic statistics work to stop. Its statistics cost nothing until read
  /// (GStreamer's RTP session keeps the counters in any case, and
  /// ``LocalTrackPublication/statistics`` and ``RemoteVideoTrack/statistics`` read them when
  /// asked), so the flag is kept for code that sets it, reads back what was set, and changes
  /// nothing else.
  public var reportStatistics: Bool {
    get { statisticsFlag.load(ordering: .relaxed) }
    set { statisticsFlag.store(newValue, ordering: .relaxed) }
  }
  private let remotes = Mutex<[String: RemoteParticipant]>([:])
  private let silence = Mutex<(timeout: Duration, ends: Bool)>((RTPReceiver.leaveTimeout, true))
  /// How long a sender received with `listen` may send nothing before it has left (10 s, the
  /// documented default; tests shorten it), for the streams opened from now on.
  var leaveTimeout: Duration {
    get { silence.withLock { $0.timeout } }
    set { silence.withLock { $0.timeout = newValue } }
  }

  /// Whether a sender received with `listen` that leaves (its RTCP BYE, or 10 s of silence)
  /// ends its participant, as seed 001 says: its tracks end, the views showing them let go of
  /// them and clear, and the room forgets it (``RemoteParticipant/hasLeft``). True by default;
  /// false keeps the participant and its receivers as they are, following whoever sends to the
  /// port next (a sender that restarts after a while), as `revue receive` does. For the streams
  /// opened from now on.
  public var endsParticipantsThatLeave: Bool {
    get { silence.withLock { $0.ends } }
    set { silence.withLock { $0.ends = newValue } }
  }

  /// The silence timeout of the streams opened now; nil when senders never leave.
  private var receiverLeaveTimeout: Duration? { silence.withLock { $0.ends ? $0.timeout : nil } }

  /// A room of its own, with a local participant.
  public init() {
    let participant = LocalParticipant()
    localParticipant = participant
    participant.room = WeakRoom(room: self)
  }

  /// Sets where publications are sent: `rtp://HOST:PORT`, or `srtp://HOST:PORT?key=BASE64`
  /// for SRTP (RFC 3711; SRTCP too): the key‖salt in base64, 30 bytes for the default suite
  /// AES_CM_128_HMAC_SHA1_80, or 28 with `&suite=aes-128-gcm` (AEAD_AES_128_GCM); or
  /// `whip+https://HOST/PATH` (`whip+http://` for a local endpoint): each publication is then
  /// offered to the endpoint, with `options.token` (see
  /// ``LocalParticipant/publish(videoTrack:options:)``). Publications made after the call use it.
  /// - Throws: ``RevueError`` (`.invalidInput`) for another scheme, a missing or odd port, a
  ///   host that does not resolve, or a key that is missing or malformed (the message says
  ///   what is wrong with it, never what it is); nothing changes then.
  public func connect(to url: URL, options: ConnectOptions = ConnectOptions()) async throws {
    let shown = SRTPKey.redacting(url)
    if url.scheme == "whip+https" || url.scheme == "whip+http" {
      let endpoint = try WHIPPublication.httpURL(url)
      try WHIPExchange.checkToken(options.token, for: endpoint)
      state.withLock { $0.destination = .whip(endpoint: endpoint, token: options.token, timeout: options.timeout) }
      return
    }
    guard url.scheme == "rtp" || url.scheme == "srtp" else {
      throw RevueError(
        .invalidInput,
        "unsupported URL '\(shown)': use rtp://HOST:PORT, srtp://HOST:PORT?key=BASE64 or whip+https://HOST/PATH")
    }
    guard let host = url.host, !host.isEmpty else {
      throw RevueError(.invalidInput, "URL '\(shown)' has no host: use rtp://HOST:PORT")
    }
    guard let port = url.port, port > 0, port < 65_534, port % 2 == 0 else {
      throw RevueError(.invalidInput, "URL '\(shown)' needs an even port below 65534 (RTP on it, RTCP on the next)")
    }
    let key = try Self.key(of: url)
    let address = try Self.resolve(host)
    state.withLock { $0.destination = .rtp(address: address, port: port, key: key) }
  }

  /// The SRTP key of an `srtp://` URL, nil for `rtp://`.
  /// - Throws: ``RevueError`` when an `srtp://` URL has no key or a malformed one, or an
  ///   `rtp://` URL has one.
  private static func key(of url: URL) throws(RevueError) -> SRTPKey? {
    let key = try SRTPKey.from(query: url)
    if url.scheme == "srtp", key == nil {
      throw RevueError(
        .invalidInput,
        "an srtp:// URL needs its key: srtp://HOST:PORT?key=BASE64 (\(SRTPKey.Suite.aesCM128HMACSHA1_80.keyLength)"
          + " bytes of key‖salt; `revue stream --srtp` makes one)")
    }
    if url.scheme == "rtp", key != nil {
      throw RevueError(.invalidInput, "an rtp:// URL takes no key: use srtp://HOST:PORT?key=BASE64 to encrypt")
    }
    return key
  }

  /// The SDP a receiver opens to play the published streams (over RTP; with a WHIP
  /// destination, the endpoint is what receivers open, and the SDP has no media).
  public var sdp: String {
    let (destination, publications) = state.withLock { ($0.destination, $0.publications) }
    var address = "127.0.0.1"
    if case .rtp(let host, _, _) = destination { address = host }
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

  /// Receives a stream on `rtp://ADDRESS:PORT` (RTP on PORT, RTCP on PORT + 1), or SRTP on
  /// `srtp://ADDRESS:PORT?key=BASE64` (and `&suite=aes-128-gcm`, as ``connect(to:options:)`` takes it);
  /// each sender becomes a ``RemoteParticipant``. With SRTP, a packet that fails authentication
  /// (another key, or tampered with) is dropped and counted
  /// (``RemoteVideoTrack/Statistics/packetsUnauthenticated``), and the receiver goes on.
  /// - Parameters:
  ///   - url: where to receive: `rtp://ADDRESS:PORT` or `srtp://ADDRESS:PORT?key=BASE64`.
  ///   - codec: the stream's codec (`?codec=h264` in the URL also says it); VP8 by default.
  ///   - latency: how long a missing packet is waited for, in milliseconds (the jitter buffer's
  ///     latency).
  ///   - lossRecovery: how lost packets are recovered: NACK asks a sender that retransmits
  ///     (RTX on payload type 97, as Revue's senders do); FEC decodes ULPFEC on payload type 122.
  ///   - source: when set, only packets (RTP and RTCP) from this host (a name or a numeric IPv4
  ///     address) are taken; the others are counted
  ///     (``RemoteVideoTrack/Statistics/packetsFromOtherSources``) and dropped. `?from=HOST` in
  ///     the URL says it too.
  /// - Returns: the participant of the stream.
  /// - Throws: ``RevueError`` for a malformed URL or key, a source that does not resolve, or a
  ///   port that cannot be bound; nothing starts then.
  @discardableResult
  public func listen(
    on url: URL, codec: VideoCodec? = nil, latency: Int = Room.defaultLatency, lossRecovery: LossRecovery = .nack,
    from source: String? = nil
  ) async throws -> RemoteParticipant {
    guard url.scheme == "rtp" || url.scheme == "srtp", let host = url.host, let port = url.port, port > 0,
      port < 65_535
    else {
      throw RevueError(
        .invalidInput,
        "cannot listen on '\(SRTPKey.redacting(url))': use rtp://ADDRESS:PORT or srtp://ADDRESS:PORT?key=BASE64")
    }
    let key = try Self.key(of: url)
    let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
    let allowed = try (source ?? query.first { $0.name == "from" }?.value).map(Self.resolveSource)
    let named = query.first { $0.name == "codec" }?.value
    let chosen =
      try codec ?? named.map { name throws(RevueError) in
        guard let codec = VideoCodec(rawValue: name) else {
          throw RevueError(.invalidInput, "unknown codec '\(name)' (vp8 or h264)")
        }
        return codec
      } ?? .vp8
    let address = try Self.resolve(host)
    let track = try RemoteVideoTrack(
      name: "video", codec: chosen, address: address, port: port, latency: latency, recovery: lossRecovery,
      srtp: key, source: allowed, leaveTimeout: receiverLeaveTimeout)
    let participant = RemoteParticipant(videoTrack: track, audioTrack: nil)
    remotes.withLock { $0["rtp:\(port)"] = participant }
    forgetWhenLeft(participant)
    return participant
  }

  /// Receives the streams an SDP describes (its `m=video` and `m=audio` sections: VP8, H.264
  /// and Opus), on `address`: each on the port of its `m=` line (RTCP on the next one), under
  /// the payload type its `a=rtpmap` lines give the codec (the first of the `m=` line that Revue
  /// decodes), as any sender writes them (ffmpeg's RTP muxer sends Opus on 97).
  /// - Parameters:
  ///   - sdp: the SDP text, as a sender writes it (``Room/sdp`` of a Revue room).
  ///   - address: the local address the ports are bound on (all of them by default).
  ///   - latency: how long a missing video packet is waited for, in milliseconds (audio waits
  ///     50 ms at most).
  ///   - lossRecovery: the loss recovery used, of what the SDP offers (an `rtx` payload type
  ///     whose `a=fmtp` `apt` is the video's for NACK, an `ulpfec` one for FEC).
  ///   - measuresAVSync: whether the participant measures the lip sync of a stream
  ///     that carries the sync test signal (``RemoteParticipant/avSyncMilliseconds``): it reads
  ///     64 pixels of every frame and every audio sample.
  ///   - source: when set, only packets from this host are taken, as in ``listen(on:codec:latency:lossRecovery:from:)``.
  ///
  /// A section whose profile is `RTP/SAVP` or `RTP/SAVPF` is received as SRTP with the key of
  /// its `a=crypto` line (SDES, RFC 4568: AES_CM_128_HMAC_SHA1_80 or AEAD_AES_128_GCM, `inline:`
  /// key‖salt in base64).
  /// - Returns: the participant whose tracks they are.
  /// - Throws: ``RevueError`` naming the SDP line that is malformed or unsupported (a payload
  ///   type that is not a number from 0 to 127, a codec Revue does not decode, or one at another
  ///   clock rate or on a static payload type, an SRTP section without a usable key among them;
  ///   the message never holds the key), a source
  ///   that does not resolve, or a port that cannot be bound; nothing is received then.
  @discardableResult
  public func listen(
    sdp: String, on address: String = "0.0.0.0", latency: Int = Room.defaultLatency,
    lossRecovery: LossRecovery = [.nack, .fec], measuresAVSync: Bool = false, from source: String? = nil
  ) async throws -> RemoteParticipant {
    let media = try SDPMedia.parse(sdp)
    let resolved = try Self.resolve(address)
    let allowed = try source.map(Self.resolveSource)
    let meter = measuresAVSync ? SyncMeter() : nil
    var video: RemoteVideoTrack?
    var audio: RemoteAudioTrack?
    for section in media {
      switch section.kind {
      case .video(let codec):
        guard video == nil else { continue }
        video = try RemoteVideoTrack(
          name: "video", codec: codec, address: resolved, port: section.port, payloadTypes: section.payloadTypes,
          latency: latency, recovery: section.recovery.intersection(lossRecovery), srtp: section.key, source: allowed,
          syncMeter: meter, leaveTimeout: receiverLeaveTimeout)
      case .opus(let channels, let stereo):
        guard audio == nil else { continue }
        audio = try RemoteAudioTrack(
          name: "audio", address: resolved, port: section.port, payloadType: section.payloadTypes.media,
          channels: channels, stereo: stereo, latency: min(latency, Self.audioLatency), srtp: section.key,
          source: allowed, syncMeter: meter, leaveTimeout: receiverLeaveTimeout)
      }
    }
    let participant = RemoteParticipant(videoTrack: video, audioTrack: audio, syncMeter: meter)
    remotes.withLock { $0["sdp:\(media.first?.port ?? 0)"] = participant }
    forgetWhenLeft(participant)
    return participant
  }

  /// Plays the stream a WHEP server serves (the IETF WHEP draft): the node's own
  /// ``WebRTCBroadcast``, or any other (MediaMTX, a media server's WHEP front end). One WebRTC
  /// connection receives the video (VP8 or H.264, as the server picks; lost packets asked for
  /// again, keyframes asked for after a loss) and the audio (Opus), each decoded into its track
  /// as ``listen(on:codec:latency:lossRecovery:from:)``'s are; WHEP pulls from a server rather
  /// than binding a port, hence a method of its own.
  ///
  ///     let room = Room()
  ///     let camera = try await room.watch(whep: URL(string: "https://node.example:8889/camera/whep")!, token: "T")
  ///     camera.videoTrack?.add(videoRenderer: view)
  ///     …
  ///     await room.disconnect()  // DELETE: the server ends the session
  ///
  /// The participant's ``RemoteParticipant/identity`` is the URL (without its query); its audio
  /// track is nil when the server sends no audio. Its tracks' ``RemoteVideoTrack/state`` fails
  /// (views clear) when the connection fails or the server sends nothing for 10 s; the session is
  /// deleted on the server then, on ``disconnect()``, and when the participant is let go of.
  /// - Parameters:
  ///   - url: the server's WHEP URL: `https://HOST/PATH`, or `http://` for a server on this
  ///     machine or a test (`whep+https://` and `whep+http://` are taken too).
  ///   - token: the bearer token the server wants (`Authorization: Bearer`), if any; never sent
  ///     over plain `http://` to another machine.
  ///   - timeout: how long each step may take: the HTTP exchange (in all, however slowly the
  ///     server sends), the connection (ICE and DTLS).
  /// - Returns: the participant whose tracks play the stream, once the media connection is up.
  /// - Throws: ``RevueError``: `.invalidInput` for another scheme, or a token for plain http to
  ///   another machine; `.network` for a server that cannot be reached, answers anything but
  ///   `201` (the message quotes its body's first line), answers without an SDP or a `Location`,
  ///   sends no stream Revue plays, or whose connection does not come up within `timeout`;
  ///   `.gstreamer` when the receiver cannot start. Nothing is left running then, and a session
  ///   the server made is deleted.
  @discardableResult
  public func watch(whep url: URL, token: String? = nil, timeout: Duration = .seconds(10)) async throws(RevueError)
    -> RemoteParticipant
  {
    let participant = try await WHEPSession.participant(watching: url, token: token, timeout: timeout)
    remotes.withLock { remotes in
      let key = "whep:\(participant.identity)"
      var unique = key
      var number = 1
      while remotes[unique] != nil {
        number += 1
        unique = "\(key) (\(number))"
      }
      remotes[unique] = participant
    }
    return participant
  }

  /// Forgets `participant` once it has left (``RemoteParticipant/hasLeft``): it is no longer
  /// in ``remoteParticipants``, and its receivers stop (the ports are free again).
  private func forgetWhenLeft(_ participant: RemoteParticipant) {
    participant.whenLeft { [weak self] participant in
      self?.remotes.withLock { remotes in remotes = remotes.filter { $0.value !== participant } }
      Task { await participant.stop() }
    }
  }

  /// The senders received, by the key their stream was opened with; a sender that left is no
  /// longer among them.
  public var remoteParticipants: [String: RemoteParticipant] { remotes.withLock { $0 } }

  /// Stops receiving every stream and every publication, and forgets the destination: its SRTP
  /// key and WHIP token with it (publishing again needs a new ``connect(to:options:)``).
  public func disconnect() async {
    state.withLock { $0.destination = nil }
    let all = remotes.withLock { remotes in
      defer { remotes.removeAll() }
      return Array(remotes.values)
    }
    for participant in all { await participant.stop() }
    for publication in publications { await unpublish(publication)?.value }
  }

  /// The publications, in the order they were made.
  public var publications: [LocalTrackPublication] { state.withLock { $0.publications } }

  /// Publishes `track` on the first free port pairs: one per stream (one per simulcast layer);
  /// or in a WHIP session of its own, its layers offered as simulcast (on by default there).
  func publish(_ track: LocalVideoTrack, options: VideoPublishOptions) async throws(RevueError)
    -> LocalTrackPublication
  {
    let size = track.publishedSize
    if case .whip(let endpoint, let token, let timeout) = destination {
      let whip = try await WHIPPublication(
        video: (track, options.layers(for: size, toSFU: true)), audio: nil, codec: options.preferredCodec,
        to: endpoint, token: token, adaptiveBitrate: options.adaptiveBitrate, timeout: timeout)
      Self.warnOfWhatWHIPLacks(options, whip: whip, track: track)
      return keep(LocalTrackPublication(whip: whip, track: track, media: .video(options.preferredCodec, whip.layers)))
    }
    let layers = options.layers(for: size)
    return try add(pairs: layers.count) { host, port, key throws(RevueError) in
      try LocalTrackPublication(
        video: track, codec: options.preferredCodec, layers: layers, recovery: options.lossRecovery, host: host,
        port: port, adaptiveBitrate: options.adaptiveBitrate, srtp: key)
    }
  }

  /// Says, once for a WHIP publication of `track`, which of `options` it cannot honour: adaptive
  /// bitrate for simulcast layers, and FEC (its statistics say what is on).
  private static func warnOfWhatWHIPLacks(
    _ options: VideoPublishOptions, whip: WHIPPublication, track: LocalVideoTrack
  ) {
    var lacking: [String] = []
    if options.adaptiveBitrate, !whip.statistics.adaptiveBitrate { lacking.append("adaptive bitrate") }
    if options.lossRecovery.contains(.fec) { lacking.append("FEC") }
    guard !lacking.isEmpty else { return }
    RevueLog.log(
      .warning, "WHIP",
      "the WHIP publication of \(track.name) has no \(lacking.joined(separator: " nor ")) yet, though its options ask"
        + " for it: a fixed bitrate, and retransmissions and keyframe requests for loss")
  }

  /// Publishes an audio track (Opus) on the first free port pair, or in a WHIP session of its own.
  func publish(_ track: LocalAudioTrack, options: AudioPublishOptions) async throws(RevueError)
    -> LocalTrackPublication
  {
    let preset = (track.capturer as? MicrophoneCapturer).map { AudioEncoding(maxBitrate: $0.options.preset.bitrate) }
    let encoding = options.encoding ?? preset ?? .presetMusic
    if case .whip(let endpoint, let token, let timeout) = destination {
      let whip = try await WHIPPublication(
        video: nil, audio: (track, encoding), codec: .vp8, to: endpoint, token: token, timeout: timeout)
      return keep(LocalTrackPublication(whip: whip, track: track, media: .audio(encoding, dtx: false)))
    }
    return try add(pairs: 1) { host, port, key throws(RevueError) in
      try LocalTrackPublication(audio: track, encoding: encoding, dtx: options.dtx, host: host, port: port, srtp: key)
    }
  }

  /// Where publications go now.
  var destination: Destination? { state.withLock { $0.destination } }

  /// Keeps a publication made elsewhere.
  private func keep(_ publication: LocalTrackPublication) -> LocalTrackPublication {
    state.withLock { $0.publications.append(publication) }
    follow(publication)
    return publication
  }

  /// Passes the events of `publication` on as the room's, until it stops or fails.
  private func follow(_ publication: LocalTrackPublication) {
    let events = publication.events
    let (sid, broadcast) = (publication.sid, broadcast)
    // Said before the publication existed to be followed: its encoder's fallback.
    if let fallback = publication.encoderFallback { broadcast.send(.publication(sid: sid, .fault(fallback))) }
    // A publication that ended before it was followed says so once.
    if publication.state != .running { return broadcast.send(.publication(sid: sid, .state(publication.state))) }
    Task {
      for await event in events {
        broadcast.send(.publication(sid: sid, event))
        if case .state = event { return }
      }
    }
  }

  /// Makes a publication on the first `pairs` consecutive port pairs from the destination's port
  /// that no publication uses, keeps it and follows its events.
  private func add(
    pairs: Int, _ make: (_ host: String, _ port: Int, _ key: SRTPKey?) throws(RevueError) -> LocalTrackPublication
  ) throws(RevueError) -> LocalTrackPublication {
    // Under the lock, so that two publications made at once never take the same ports.
    let publication = try state.withLock { state throws(RevueError) in
      guard case .rtp(let address, let first, let key) = state.destination else {
        throw RevueError(.invalidState, "connect the room first: room.connect(to: URL(string: \"rtp://HOST:PORT\")!)")
      }
      let used = Set(state.publications.flatMap(\.ports))
      var port = first
      while (0..<pairs).contains(where: { used.contains(port + 2 * $0) }) { port += 2 }
      guard port + 2 * pairs <= 65_536 else {
        throw RevueError(.invalidInput, "no free port pair is left above \(first)")
      }
      let publication = try make(address, port, key)
      state.publications.append(publication)
      return publication
    }
    follow(publication)
    return publication
  }

  /// Stops a publication at once; returns, for a WHIP publication, the task that tells the
  /// endpoint.
  @discardableResult
  func unpublish(_ publication: LocalTrackPublication) -> Task<Void, Never>? {
    let telling = publication.stop()
    state.withLock { $0.publications.removeAll { $0 === publication } }
    return telling
  }

  /// The numeric IPv4 address of the one host a receiver takes packets from.
  private static func resolveSource(_ host: String) throws(RevueError) -> String {
    guard !host.isEmpty else { throw RevueError(.invalidInput, "the source to receive from is empty: give a host") }
    return try resolve(host)
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

import Foundation
import GStreamer
import Synchronization

/// A local video track, and an audio track if given, served to RTSP clients (VLC, ffmpeg, NVRs,
/// `rtspsrc`) by gst-rtsp-server: captured and encoded once, whatever the number of clients, and
/// sent to each over UDP or interleaved in its RTSP connection (TCP), optionally behind a user
/// name and password.
///
///     let broadcast = try RTSPBroadcast(track: camera, port: 8554)
///     print(broadcast.url)  // rtsp://HOST:8554/camera
///
/// The encoder runs while at least one client plays: the first client's `PLAY` builds it, the
/// last client's `TEARDOWN` (or a dropped connection, once its session times out) ends it.
/// Frames and audio carry their capture time (`SourceFeed`), in the one running time of the
/// media: the server's RTCP sender reports map both streams' RTP times onto one clock, by which a
/// client that lines streams up by them (`rtspsrc`) plays the audio in sync with the video. A
/// fault of that media (an encoder or a socket that fails) reaches ``events``; an error ends the
/// media and its clients' sessions, not the broadcast: the next client has a new one built.
public final class RTSPBroadcast: Sendable {
  /// What the broadcast has done.
  public struct Statistics: Sendable, Hashable {
    /// Frames the track gave to an encoder.
    public var framesSent: Int
    /// Audio buffers the audio track gave to its encoder (none without one).
    public var audioBuffersSent: Int
    /// Encoders started so far: one for every client while they share it, another when a client
    /// comes after the last one left.
    public var encodersStarted: Int
    /// RTSP sessions open now (clients set up and not gone).
    public var sessions: Int
    /// Keyframes asked of the encoder: one for each client that starts playing, and one for each
    /// RTCP keyframe request (PLI, FIR) of a client.
    public var keyframeRequests: Int
    /// Of those, the ones the encoder was asked to answer: a request closer than 250 ms to the
    /// last one answered is dropped, as for an RTP publication (the keyframe it would make is on
    /// its way to every client).
    public var keyframeRequestsHonoured: Int
  }

  /// A user allowed in: a name and a password.
  public typealias Credentials = RTSPServer.Credentials
  /// How users prove who they are: digest (the password never crosses the network) or basic.
  public typealias Authentication = RTSPServer.Authentication

  /// Where clients connect: `rtsp://HOST:PORT/PATH`, with this host's name when the server
  /// listens on every address.
  public let url: URL
  /// The port the server listens on.
  public let port: Int
  /// The codec the track is encoded with.
  public let codec: VideoCodec
  /// The audio track served beside the video, if any.
  public let audio: LocalAudioTrack?
  /// The codec the audio is served in.
  public let audioCodec: AudioCodec

  private let server: RTSPServer
  let feed: Feed
  private let track: LocalVideoTrack
  private let status: StreamStatus

  /// Serves `track` at `rtsp://address:port/path`.
  /// - Parameters:
  ///   - track: the video track served.
  ///   - address: the address to listen on: loopback by default (this machine's clients only);
  ///     `0.0.0.0` for every address, which shares the track with the whole network (give
  ///     `credentials` then).
  ///   - port: the port; 8554 by default (554 needs root), 0 for any free one (see ``port``).
  ///   - path: the path clients ask for, from `/`.
  ///   - codec: H.264 by default (what VLC, NVRs and browsers' RTSP gateways all take), or VP8.
  ///   - encoding: the bitrate and frame rate; by default the track's size's, at 30 fps.
  ///   - audio: an audio track (a microphone) to serve beside the video, as a second stream of
  ///     the media, in `audioCodec` (Opus at 48 kHz by default, or AAC-LC) at `audioEncoding`'s
  ///     bitrate (48 kb/s by default).
  ///   - audioCodec: the audio's codec: Opus by default, or AAC-LC.
  ///   - audioEncoding: the audio's bitrate; 48 kb/s by default.
  ///   - credentials: the users let in; none lets anyone in.
  ///   - authentication: how users prove who they are: digest by default, which never sends the
  ///     password.
  /// - Throws: ``RevueError`` (``RevueError/Kind/invalidInput``) for a path that does not start
  ///   with `/` or an address the server cannot listen on (in use, not this host's).
  public init(
    track: LocalVideoTrack, address: String = "127.0.0.1", port: Int = 8554, path: String = "/camera",
    codec: VideoCodec = .h264, encoding: VideoEncoding? = nil, audio: LocalAudioTrack? = nil,
    audioEncoding: AudioEncoding = .presetMusic, audioCodec: AudioCodec = .opus, credentials: [Credentials] = [],
    authentication: Authentication = .digest
  ) throws(RevueError) {
    guard path.hasPrefix("/"), !path.contains(where: \.isWhitespace) else {
      throw RevueError(.invalidInput, "the RTSP path '\(path)' must start with / and hold no spaces")
    }
    do {
      server = try RTSPServer(address: address, port: port, credentials: credentials, authentication: authentication)
    } catch {
      throw RevueError(.invalidInput, "cannot serve RTSP", underlying: error)
    }
    let size = track.publishedSize
    let layer = VideoParameters(dimensions: size, encoding: encoding ?? VideoEncoding.forDimensions(size))
    // The payloader of stream 0 is pay0; the server gives it its payload type, as in its SDP.
    // The audio, stream 1, is a branch of the same pipeline: one clock and one base time for
    // both appsrcs, so that the capture times the feeds stamp are on one timeline. The server
    // builds the media from a description, which the chains write.
    var media: [ElementChain]
    do {
      media = [
        ([SourceFeed.source()] + (try VideoEncoder(codec, layer, scaled: false).chain())).payloading(
          as: "pay0", payloadType: 96)
      ]
    } catch {
      throw RevueError(.gstreamer, "cannot describe the \(codec.rawValue) encoder", underlying: error)
    }
    if audio != nil {
      let encoder = AudioEncoder(encoding: audioEncoding, dtx: false, codec: audioCodec)
      media.append(
        ([SourceFeed.source(named: "audiosource", audio: true)] + encoder.chain(encoderName: "audioencoder"))
          .payloading(as: "pay1", payloadType: encoder.payloadType))
    }
    let launch = "( " + media.map(\.launchDescription).joined(separator: " ") + " )"
    let feed = Feed(frameRate: layer.encoding.maxFps)
    self.feed = feed
    let status = StreamStatus(name: "the RTSP media of \(track.name)")
    // An error ends the media it came from (the server closes its clients), not the broadcast.
    server.mount(path, launch: launch, shared: true, configure: { media in feed.attach(media) }) { message in
      if let fault = MediaFault(message) { status.report(fault, ends: false) }
    }
    self.status = status
    server.onPlay { feed.clientJoined() }
    self.track = track
    self.audio = audio
    self.audioCodec = audioCodec
    self.codec = codec
    self.port = server.port
    let host = ["0.0.0.0", "::", ""].contains(address) ? ProcessInfo.processInfo.hostName : address
    let bracketed = host.contains(":") ? "[\(host)]" : host
    url = URL(string: "rtsp://\(bracketed):\(server.port)\(path)")!
    track.attach(feed.frames)
    audio?.attach(feed.audio)
  }

  deinit { stop() }

  /// Whether the broadcast serves (faults of a media do not end it) or was stopped.
  public var state: StreamState { status.state }

  /// The broadcast's changes from now on: the faults of its media, GStreamer's text and the
  /// element's path (an error ends only the media it came from), and its end.
  public var events: AsyncStream<StreamEvent> { status.events }

  /// What the broadcast has done so far.
  public var statistics: Statistics {
    let state = feed.state.withLock { $0 }
    return Statistics(
      framesSent: feed.frames.framesSent, audioBuffersSent: feed.audio.framesSent,
      encodersStarted: state.encodersStarted, sessions: server.sessionCount,
      keyframeRequests: state.keyframeRequests.received, keyframeRequestsHonoured: state.keyframeRequests.honoured)
  }

  /// Ends every client's session and stops serving; the track goes on.
  public func stop() {
    track.detach(feed.frames)
    audio?.detach(feed.audio)
    server.stop()
    feed.frames.attach(nil)
    feed.audio.attach(nil)
    status.stopped()
  }

  /// Takes the track's frames (and the audio track's buffers) to the encoders of the media
  /// playing now, if one is, and asks the video encoder for keyframes.
  final class Feed: Sendable {
    struct State {
      /// The payloader, whose output is where keyframe requests come from (RTCP, new clients).
      var payloader: Element?
      var encodersStarted = 0
      var keyframeRequests = RTPSender.KeyframeRequests()
    }
    let state = Mutex(State())
    let frames: SourceFeed
    /// The audio track's buffers, to the media's `audiosource` (when it has one).
    let audio = SourceFeed()

    /// New clients' keyframe requests (their PLIs go through the payloader's limit).
    private let joins: KeyframeLimiter

    /// A feed of video encoded at `frameRate`.
    init(frameRate: Int) {
      frames = SourceFeed(frameRate: frameRate)
      let feed = Relay<Feed>()
      joins = KeyframeLimiter { feed.target?.requestKeyframe() }
      feed.target = self
    }

    /// A media was built for the first client (or the first after all left): its sources are
    /// the ones fed from now on, and keyframe requests reach its encoder at most every 250 ms.
    func attach(_ media: Bin) {
      guard let source = try? media.element(named: "source", as: AppSrc.self) else {
        return RevueLog.log(.error, "RTSP", "the media has no source: nothing will be sent")
      }
      frames.attach(source)
      audio.attach(try? media.element(named: "audiosource", as: AppSrc.self))
      let payloader = media.element(named: "pay0")
      RTPSender.limitKeyframeRequests(on: payloader) { [weak self] honoured in
        self?.state.withLock { state in
          state.keyframeRequests.received += 1
          if honoured { state.keyframeRequests.honoured += 1 }
        }
      }
      state.withLock { state in
        state.payloader = payloader
        state.encodersStarted += 1
      }
    }

    /// A client started playing: asks the encoder for a keyframe, as a client's PLI would; one
    /// that joins a shared media would otherwise wait up to a keyframe interval (2 s). Within
    /// 250 ms of the last, it is held to the end of the 250 ms (``KeyframeLimiter/join()``).
    func clientJoined() { joins.join() }

    /// Asks the encoder for a keyframe (with its parameter sets), as a client's PLI would.
    func requestKeyframe() {
      guard let output = state.withLock({ $0.payloader })?.staticPad("src") else { return }
      VideoEncoder.requestKeyframe(upstreamOf: output)
    }
  }
}

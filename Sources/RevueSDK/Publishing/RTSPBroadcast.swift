import Foundation
import GStreamer
import Synchronization

/// A local video track served to RTSP clients (VLC, ffmpeg, NVRs, `rtspsrc`) by gst-rtsp-server:
/// captured and encoded once, whatever the number of clients, and sent to each over UDP or
/// interleaved in its RTSP connection (TCP), optionally behind a user name and password.
///
///     let broadcast = try RTSPBroadcast(track: camera, port: 8554)
///     print(broadcast.url)  // rtsp://HOST:8554/camera
///
/// The encoder runs while at least one client plays: the first client's `PLAY` builds it, the
/// last client's `TEARDOWN` (or a dropped connection, once its session times out) ends it.
/// Frames are stamped as they reach the encoder. A fault of that media (an encoder or a socket
/// that fails) reaches ``events``; an error ends the media and its clients' sessions, not the
/// broadcast: the next client has a new one built.
public final class RTSPBroadcast: Sendable {
  /// What the broadcast has done.
  public struct Statistics: Sendable, Hashable {
    /// Frames the track gave to an encoder.
    public var framesSent: Int
    /// Encoders started so far: one for every client while they share it, another when a client
    /// comes after the last one left.
    public var encodersStarted: Int
    /// RTSP sessions open now (clients set up and not gone).
    public var sessions: Int
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

  private let server: RTSPServer
  let feed = Feed()
  private let track: LocalVideoTrack
  private let status: StreamStatus

  /// Serves `track` at `rtsp://address:port/path`.
  /// - Parameters:
  ///   - address: the address to listen on; every address by default.
  ///   - port: the port; 8554 by default (554 needs root), 0 for any free one (see ``port``).
  ///   - path: the path clients ask for, from `/`.
  ///   - codec: H.264 by default (what VLC, NVRs and browsers' RTSP gateways all take), or VP8.
  ///   - encoding: the bitrate and frame rate; by default the track's size's, at 30 fps.
  ///   - credentials: the users let in; none lets anyone in.
  ///   - authentication: how users prove who they are: digest by default, which never sends the
  ///     password.
  /// - Throws: ``RevueError`` (``RevueError/Kind/invalidInput``) for a path that does not start
  ///   with `/` or an address the server cannot listen on (in use, not this host's).
  public init(
    track: LocalVideoTrack, address: String = "0.0.0.0", port: Int = 8554, path: String = "/camera",
    codec: VideoCodec = .h264, encoding: VideoEncoding? = nil, credentials: [Credentials] = [],
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
    let chain = LocalTrackPublication.videoChain(codec, layer, scaled: false)
    // The payloader of stream 0 is pay0; the server gives it its payload type, as in its SDP.
    let launch =
      "( appsrc name=source is-live=true format=time do-timestamp=true max-buffers=2 leaky-type=downstream"
      + " ! \(chain) name=pay0 pt=96 )"
    let feed = self.feed
    let status = StreamStatus(name: "the RTSP media of \(track.name)")
    // An error ends the media it came from (the server closes its clients), not the broadcast.
    server.mount(path, launch: launch, shared: true, configure: { media in feed.attach(media) }) { message in
      if let fault = MediaFault(message) { status.report(fault, ends: false) }
    }
    self.status = status
    server.onPlay { feed.requestKeyframe() }
    self.track = track
    self.codec = codec
    self.port = server.port
    let host = ["0.0.0.0", "::", ""].contains(address) ? ProcessInfo.processInfo.hostName : address
    let bracketed = host.contains(":") ? "[\(host)]" : host
    url = URL(string: "rtsp://\(bracketed):\(server.port)\(path)")!
    track.add(videoRenderer: feed.frames)
  }

  deinit { stop() }

  /// Whether the broadcast serves (faults of a media do not end it) or was stopped.
  public var state: StreamState { status.state }

  /// The broadcast's changes from now on: the faults of its media, GStreamer's text and the
  /// element's path (an error ends only the media it came from), and its end.
  public var events: AsyncStream<StreamEvent> { status.events }

  /// What the broadcast has done so far.
  public var statistics: Statistics {
    Statistics(
      framesSent: feed.frames.framesSent, encodersStarted: feed.state.withLock { $0.encodersStarted },
      sessions: server.sessionCount)
  }

  /// Ends every client's session and stops serving; the track goes on.
  public func stop() {
    track.remove(videoRenderer: feed.frames)
    server.stop()
    feed.frames.attach(nil)
    status.stopped()
  }

  /// Takes the track's frames to the encoder of the media playing now, if one is, and asks it
  /// for keyframes.
  final class Feed: Sendable {
    struct State {
      /// The payloader's input, where a keyframe is asked for.
      var payloaderInput: Pad?
      var encodersStarted = 0
    }
    let state = Mutex(State())
    let frames = SourceFeed()

    /// A media was built for the first client (or the first after all left): its source is
    /// the one fed from now on.
    func attach(_ media: Bin) {
      guard let source = try? media.element(named: "source", as: AppSrc.self) else {
        return RevueLog.log(.error, "RTSP", "the media has no source: nothing will be sent")
      }
      frames.attach(source)
      let payloaderInput = media.element(named: "pay0")?.staticPad("sink")
      state.withLock { state in
        state.payloaderInput = payloaderInput
        state.encodersStarted += 1
      }
    }

    /// Asks the encoder for a keyframe (with its parameter sets): a client started playing, and
    /// one that joins a shared media would otherwise wait up to a keyframe interval (2 s).
    func requestKeyframe() {
      guard let input = state.withLock({ $0.payloaderInput }),
        let request = try? Structure("GstForceKeyUnit, all-headers=(boolean)true")
      else { return }
      input.push(event: .customUpstream(request))
    }
  }
}

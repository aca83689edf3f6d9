import Foundation
import RevueProcess
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Issue 28's receive side: `Room.watch(whep:)` plays the node's own ``WebRTCBroadcast`` (a
/// virtual camera and microphone), picture and sound; disconnecting deletes the session on the
/// server; a wrong token, an unreachable server, an answer that is no SDP and a connection that
/// never comes up give a clear error and leave nothing running.
@Suite(.tier(.interop), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct WHEPReceiveTests {
  init() { TestEnvironment.prepare() }

  /// Waits until the broadcast has `count` viewers, within `seconds`.
  static func waitForViewers(_ count: Int, of changes: AsyncStream<Int>, within seconds: Double) async throws {
    _ = try await withDeadline(seconds, "\(count) viewer(s)") {
      for await viewers in changes where viewers == count { return true }
      return false
    }
  }

  /// `frames` frames more from `renderer`; returns how long they took.
  static func time(_ frames: Int, of renderer: FrameStream, within seconds: Double) async throws -> Duration {
    let start = ContinuousClock.now
    let stream = renderer.frames
    _ = try await withDeadline(seconds, "\(frames) frames") {
      var seen = 0
      for await _ in stream {
        seen += 1
        if seen == frames { return seen }
      }
      return seen
    }
    return ContinuousClock.now - start
  }

  /// The node's broadcast of a virtual camera (640×480, VP8) and microphone: ≥ 25 fps decoded,
  /// audio buffers at 48 kHz stereo, and the DELETE on disconnect takes its viewers back to 0.
  /// Alone in the process: it counts frames per second.
  @Test(.wholeProcess) func theNodesBroadcastPlaysWithSound() async throws {
    let codec = VideoCodec.vp8
    try await WHIPPublicationTests.withCameraAndMicrophone { track, audio in
      let broadcast = try WebRTCBroadcast(track: track, port: 0, codec: codec, audio: audio, token: "s3cret")
      defer { broadcast.stop() }
      let changes = broadcast.viewerChanges
      let room = Room()
      let remote = try await room.watch(whep: broadcast.whepURL, token: "s3cret")
      #expect(remote.identity == broadcast.whepURL.absoluteString)
      #expect(room.remoteParticipants.count == 1)
      let video = try #require(remote.videoTrack)
      let sound = try #require(remote.audioTrack, "the broadcast sends audio")
      #expect(video.codec == codec && video.state == .running)
      let frames = FrameStream()
      let buffers = AudioStream()
      video.add(videoRenderer: frames)
      sound.add(audioRenderer: buffers)

      // The first frame, 30 more, then 90 timed: 30 fps from the camera, ≥ 25 decoded.
      let first = try await frames.next("the first frame", within: 20)
      #expect(first.width == 640 && first.height == 480)
      // Past the start, whose frames may come in a burst once the keyframe is there.
      _ = try await Self.time(30, of: frames, within: 10)
      let before = frames.count
      let took = try await Self.time(90, of: frames, within: 15)
      let fps = Double(frames.count - before) / (Double(took / .milliseconds(1)) / 1000)
      print("WHEP \(codec): \(frames.count - before) frames in \(took): \(String(format: "%.1f", fps)) fps")
      #expect(fps >= 25, "\(fps) fps")
      let statistics = video.statistics
      #expect(statistics.framesDecoded >= 121 && statistics.packetsReceived > statistics.framesDecoded)
      #expect(statistics.bytesReceived > 0 && statistics.invalidPackets == 0, "\(statistics)")
      let heard = try await collect(50, of: buffers.buffers, within: 10, "50 audio buffers")
      #expect(heard.count == 50 && heard.allSatisfy { $0.sampleRate == 48_000 && $0.channelCount == 2 })
      #expect(sound.statistics.framesDecoded >= 50 && sound.statistics.packetsReceived >= 50)
      #expect(broadcast.statistics.viewers == 1)

      // The DELETE reaches the server: its viewer is gone.
      await room.disconnect()
      #expect(video.state == .stopped && sound.state == .stopped && room.remoteParticipants.isEmpty)
      try await Self.waitForViewers(0, of: changes, within: 5)
      #expect(broadcast.statistics.viewers == 0 && broadcast.statistics.viewersConnected == 1)
      try await audio.capturer?.stopCapture()
      try await track.capturer?.stopCapture()
    }
  }

  /// The node's broadcast sends VP8 alone so far (its H.264 reaches no viewer, aiortc's
  /// neither): H.264, and VP8 from another stack, come from aiortc's WHEP server
  /// (Tests/Peers/whep_server.py, silence for audio); the DELETE reaches it.
  @Test(.wholeProcess, arguments: [VideoCodec.h264, .vp8]) func aiortcsWHEPServerPlays(_ codec: VideoCodec)
    async throws
  {
    let port = FreePorts.tcp()
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../Peers/whep_server.py").standardized
    let server = try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/python3"), [script.path, "\(port)", "--codec", codec.rawValue, "--token", "t"])
    try await server.waitForOutput(containing: "listening", within: 20)
    let room = Room()
    let remote = try await room.watch(whep: URL(string: "http://127.0.0.1:\(port)/whep")!, token: "t")
    let video = try #require(remote.videoTrack)
    #expect(video.codec == codec)
    let frames = FrameStream()
    let buffers = AudioStream()
    video.add(videoRenderer: frames)
    remote.audioTrack?.add(audioRenderer: buffers)
    let first = try await frames.next("the first frame", within: 20)
    #expect(first.width == 320 && first.height == 240)
    _ = try await Self.time(30, of: frames, within: 10)
    let before = frames.count
    let took = try await Self.time(90, of: frames, within: 15)
    let fps = Double(frames.count - before) / (Double(took / .milliseconds(1)) / 1000)
    print("WHEP from aiortc, \(codec): \(frames.count - before) frames in \(took): \(String(format: "%.1f", fps)) fps")
    #expect(fps >= 25, "\(fps) fps")
    let heard = try await collect(50, of: buffers.buffers, within: 10, "50 audio buffers")
    #expect(heard.count == 50)
    await room.disconnect()
    try await server.waitForOutput(containing: "deleted session", within: 10)
    await server.stop()
  }

  /// The server killed mid-stream (no DTLS close, no DELETE answered): both tracks fail within
  /// the 10 s of silence allowed and a little, saying so.
  @Test func aServerThatDiesFailsItsTracks() async throws {
    let port = FreePorts.tcp()
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .appendingPathComponent("../Peers/whep_server.py").standardized
    let server = try ChildProcess(URL(fileURLWithPath: "/usr/bin/python3"), [script.path, "\(port)", "--codec", "vp8"])
    try await server.waitForOutput(containing: "listening", within: 20)
    let room = Room()
    let remote = try await room.watch(whep: URL(string: "http://127.0.0.1:\(port)/whep")!)
    let video = try #require(remote.videoTrack)
    let events = video.events
    let audioEvents = try #require(remote.audioTrack).events
    let frames = FrameStream()
    video.add(videoRenderer: frames)
    _ = try await frames.next("the first frame", within: 20)
    await server.stop()
    let killed = ContinuousClock.now
    for stream in [events, audioEvents] {
      let fault = try await withDeadline(15, "the track to fail") { () -> MediaFault? in
        for await case .state(.failed(let fault)) in stream { return fault }
        return nil
      }
      #expect(fault?.message.contains("stopped sending") == true, "\(String(describing: fault))")
    }
    print("the dead server's tracks failed after \(ContinuousClock.now - killed)")
    #expect(ContinuousClock.now - killed < .seconds(12))
    #expect(remote.audioTrack?.state != .running)
    await room.disconnect()
  }

  /// A wrong token and none: the broadcast's 401 and its reason, in one line that never holds
  /// the token; the room keeps no participant and the broadcast no viewer.
  @Test func aWrongTokenIsTheServers401AndLeavesNothing() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await WHIPPublicationTests.camera(devices[0])
      let broadcast = try WebRTCBroadcast(track: track, port: 0, token: "s3cret")
      defer { broadcast.stop() }
      let room = Room()
      for token in ["wrong", nil] {
        do throws(RevueError) {
          _ = try await room.watch(whep: broadcast.whepURL, token: token, timeout: .seconds(5))
          Issue.record("watched with the token \(String(describing: token))")
        } catch {
          print("token \(String(describing: token)): \(error)")
          #expect(error.kind == .network, "\(error)")
          #expect("\(error)".contains("answered 401") && "\(error)".contains("a bearer token is needed"), "\(error)")
          #expect(!"\(error)".contains("wrong") && !"\(error)".contains("\n"), "\(error)")
        }
      }
      #expect(room.remoteParticipants.isEmpty)
      let statistics = broadcast.statistics
      #expect(statistics.offersRefused == 2 && statistics.viewers == 0 && statistics.viewersConnected == 0)
      try await track.capturer?.stopCapture()
    }
  }

  /// Nothing listens: a one-line error at once.
  @Test func anUnreachableServerIsSaidInOneLine() async throws {
    let url = URL(string: "http://127.0.0.1:\(FreePorts.tcp())/camera/whep")!
    let started = ContinuousClock.now
    do {
      _ = try await Room().watch(whep: url, timeout: .seconds(3))
      Issue.record("watched a server that is not there")
    } catch {
      print("unreachable: \(error)")
      #expect(error.kind == .network && "\(error)".contains("cannot POST the offer to \(url)"), "\(error)")
      #expect(!"\(error)".contains("\n"))
    }
    #expect(ContinuousClock.now - started < .seconds(5))
  }

  /// URLs that are not WHEP's, and a token for plain http to another machine: refused before
  /// anything is sent.
  @Test func urlsAndTokensThatCannotBeUsedAreRefused() async throws {
    for (url, token, says) in [
      ("rtp://127.0.0.1:5004", nil, "cannot watch 'rtp://127.0.0.1:5004': use https://HOST/PATH"),
      ("whep+http://192.0.2.1/whep", "t", "the WHEP token is not sent over plain http to 192.0.2.1"),
    ] {
      do {
        _ = try await Room().watch(whep: URL(string: url)!, token: token, timeout: .seconds(2))
        Issue.record("watched \(url)")
      } catch {
        #expect(error.kind == .invalidInput && "\(error)".hasPrefix(says), "\(error)")
      }
    }
  }

  /// A server that answers `201` with what is not an SDP: said, quoting it; and one whose
  /// answer is real but whose connection cannot come up (a proxy in front of the node's
  /// broadcast drops every ICE candidate both ways): said within the timeout, and the session
  /// deleted on the broadcast.
  @Test func anAnswerThatIsNoSDPAndAConnectionThatNeverComesUpAreSaid() async throws {
    let nonsense = try HTTPServer(address: "127.0.0.1", port: 0) { _ in
      HTTPServer.Response(
        status: 201, headers: [("Content-Type", "text/plain"), ("Location", "/camera/whep/1")],
        body: Data("hello\nworld".utf8))
    }
    defer { nonsense.stop() }
    do {
      _ = try await Room().watch(whep: URL(string: "http://127.0.0.1:\(nonsense.port)/camera/whep")!)
      Issue.record("watched a server that answers no SDP")
    } catch {
      print("no SDP: \(error)")
      #expect(error.kind == .network && "\(error)".contains("answered 201 without an SDP answer: hello world"))
    }

    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await WHIPPublicationTests.camera(devices[0])
      let broadcast = try WebRTCBroadcast(track: track, port: 0)
      defer { broadcast.stop() }
      let changes = broadcast.viewerChanges
      let exchanges = Mutex<[String]>([])
      let proxy = try Self.candidateDroppingProxy(to: broadcast) { exchange in
        exchanges.withLock { $0.append(exchange) }
      }
      defer { proxy.stop() }
      let started = ContinuousClock.now
      // 2 s: less than the broadcast waits for a viewer's RTCP (3 s), so that the DELETE ends it.
      do throws(RevueError) {
        _ = try await Room().watch(
          whep: URL(string: "http://127.0.0.1:\(proxy.port)\(broadcast.whepURL.path)")!, timeout: .seconds(2))
        Issue.record("a connection without candidates came up")
      } catch {
        print("no connection: \(error) (\(ContinuousClock.now - started))")
        #expect(error.kind == .network && "\(error)".contains("did not come up within 2.0 seconds"), "\(error)")
      }
      // Gathering, the exchange and 2 s for the connection.
      #expect(ContinuousClock.now - started < .seconds(6))
      try await Self.waitForViewers(1, of: changes, within: 5)
      try await Self.waitForViewers(0, of: changes, within: 5)
      #expect(broadcast.statistics.viewers == 0 && broadcast.statistics.viewersConnected == 1)
      #expect(exchanges.withLock { $0 } == ["POST 201", "DELETE 200"])
      try await track.capturer?.stopCapture()
    }
  }

  /// An HTTP server that forwards to `broadcast` (POST and DELETE, with their bodies and
  /// status), dropping every `a=candidate` line of the offer and of the answer; `exchanged` is
  /// told each request's method and the broadcast's status (`POST 201`).
  static func candidateDroppingProxy(
    to broadcast: WebRTCBroadcast, exchanged: @escaping @Sendable (String) -> Void
  ) throws -> HTTPServer {
    let target = "http://127.0.0.1:\(broadcast.port)"
    return try HTTPServer(address: "127.0.0.1", port: 0) { request in
      var forwarded = URLRequest(url: URL(string: target + request.path)!, timeoutInterval: 5)
      forwarded.httpMethod = request.method
      for (name, value) in request.headers where name != "content-length" && name != "host" {
        forwarded.setValue(value, forHTTPHeaderField: name)
      }
      forwarded.httpBody = Data(Self.droppingCandidates(String(decoding: request.body, as: UTF8.self)).utf8)
      guard let (body, response) = try? await URLSession.shared.data(for: forwarded),
        let reply = response as? HTTPURLResponse
      else { return .text(502, "the broadcast did not answer") }
      exchanged("\(request.method) \(reply.statusCode)")
      let headers = ["Content-Type", "Location"].compactMap { name in
        reply.value(forHTTPHeaderField: name).map { (name, $0) }
      }
      return HTTPServer.Response(
        status: reply.statusCode, headers: headers,
        body: Data(Self.droppingCandidates(String(decoding: body, as: UTF8.self)).utf8))
    }
  }

  /// `sdp` without its `a=candidate` lines.
  static func droppingCandidates(_ sdp: String) -> String {
    sdp.split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("a=candidate") }
      .joined(separator: "\r\n")
  }

  /// What an answer sends: the first video codec Revue decodes, and whether Opus comes; a
  /// rejected section (port 0) and one that does not send (`a=inactive`, `a=recvonly`) send
  /// nothing.
  @Test(.tier(.unit)) func anAnswerSaysWhatItSends() {
    let head = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"
    let video = "m=video 9 UDP/TLS/RTP/SAVPF 102 97\r\na=rtpmap:102 H264/90000\r\na=rtpmap:97 rtx/90000\r\n"
    let audio = "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n"
    #expect(WHEPSession.media(in: head + video + audio) == (.h264, true))
    #expect(WHEPSession.media(in: head + video.replacing("m=video 9", with: "m=video 0") + audio) == (nil, true))
    #expect(WHEPSession.media(in: head + video + audio + "a=inactive\r\n") == (.h264, false))
    #expect(WHEPSession.media(in: head + video + "a=recvonly\r\n") == (nil, false))
    let vp8 = "m=video 9 UDP/TLS/RTP/SAVPF 96 98\r\na=rtpmap:98 VP9/90000\r\na=rtpmap:96 VP8/90000\r\n"
    #expect(WHEPSession.media(in: head + vp8) == (.vp8, false))
    #expect(WHEPSession.media(in: head + "m=video 9 UDP/TLS/RTP/SAVPF 98\r\na=rtpmap:98 VP9/90000\r\n") == (nil, false))
    #expect(WHEPSession.media(in: "not an SDP") == (nil, false))
  }
}

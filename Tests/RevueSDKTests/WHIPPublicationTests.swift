import Foundation
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@testable import RevueSDK

/// Issue 16's WHIP: a camera published to a WHIP endpoint of aiortc (a WebRTC stack no one here
/// wrote: Tests/Peers/whip_endpoint.py), which decodes the frames, and to Janus's VideoRoom
/// (through Tests/Peers/janus_whip.py), whose subscriber decodes them; the session deleted on stop;
/// endpoints that refuse, answer nonsense or cannot be reached give a clear error in bounded
/// time and leave nothing running.
@Suite(.tier(.interop), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct WHIPPublicationTests {
  init() { TestEnvironment.prepare() }

  /// A camera track on a virtual camera at 640×480, capturing.
  static func camera(_ device: CaptureDevice) async throws -> LocalVideoTrack {
    let track = LocalVideoTrack.createCameraTrack(
      options: CameraCaptureOptions(device: device, dimensions: .h480_43, fps: 30))
    try await track.capturer?.startCapture()
    return track
  }

  /// Runs `body` with a capturing camera track and microphone track, virtual devices removed after.
  static func withCameraAndMicrophone(
    _ body: @escaping (LocalVideoTrack, LocalAudioTrack) async throws -> Void
  ) async throws {
    let microphone = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(microphone.id) }
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await camera(devices[0])
      let audio = LocalAudioTrack.createMicrophoneTrack(options: AudioCaptureOptions(device: microphone))
      try await audio.capturer?.startCapture()
      try await body(track, audio)
    }
  }

  @Test(arguments: [VideoCodec.vp8, .h264]) func aiortcDecodesWhatIsPublished(_ codec: VideoCodec) async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--token", "s3cret"])
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      let publication: WHIPPublication
      do {
        publication = try await WHIPPublication(publishing: track, to: url, token: "s3cret", codec: codec)
      } catch {
        Issue.record("the endpoint said:\n\(await endpoint.stop().error.suffix(3000))")
        throw error
      }
      #expect(publication.endpoint.scheme == "http")
      #expect(publication.resource.path.hasPrefix("/resource/"))
      // Simulcast was offered (640×480 has a smaller layer); aiortc's answer takes none.
      #expect(publication.layers.map(\.dimensions) == [.h480_43])
      try await endpoint.waitForOutput(containing: "frames 30", within: 20)
      #expect(publication.statistics.connectionState == "connected")
      #expect(publication.statistics.framesSent >= 30)
      await publication.stop()
      try await endpoint.waitForOutput(containing: "deleted session", within: 10)
      #expect(publication.state == .stopped)
      #expect(track.renderers.all.isEmpty, "the publication let go of the track")
      try await track.capturer?.stopCapture()
    }
    await endpoint.stop()
  }

  /// The camera and a microphone in one connection: aiortc decodes both.
  @Test func videoAndAudioTogether() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start()
    try await Self.withCameraAndMicrophone { track, audio in
      let publication = try await WHIPPublication(publishing: track, audio: audio, to: url)
      try await WHIPEndpoint.waitForAudioAndVideo(endpoint)
      #expect(publication.statistics.audioBuffersSent > 0)
      await publication.stop()
      #expect(audio.renderers.all.isEmpty, "the publication let go of the microphone")
      try await audio.capturer?.stopCapture()
      try await track.capturer?.stopCapture()
    }
    await endpoint.stop()
  }

  /// `Room.connect(to: whip+http://…)`: the participant's camera and microphone, each published
  /// in a session of its own, decoded by aiortc; unpublishing deletes each session; a wrong
  /// token is the endpoint's 401, and the room keeps no publication of it.
  @Test func aRoomPublishesItsTracksToAWHIPEndpoint() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--token", "s3cret"])
    try await Self.withCameraAndMicrophone { track, audio in
      let room = Room()
      let participant = try #require(room.localParticipant)

      try await room.connect(to: url, options: Room.ConnectOptions(token: "wrong", timeout: .seconds(3)))
      do {
        _ = try await participant.publish(videoTrack: track)
        Issue.record("published with a wrong token")
      } catch let error as RevueError {
        #expect(error.kind == .network && "\(error)".contains("answered 401"), "\(error)")
      }
      #expect(room.publications.isEmpty)
      #expect(track.renderers.all.isEmpty, "the refused publication let go of the track")

      try await room.connect(to: url, options: Room.ConnectOptions(token: "s3cret"))
      let video = try await participant.publish(videoTrack: track, options: VideoPublishOptions(preferredCodec: .h264))
      let sound = try await participant.publish(audioTrack: audio)
      #expect(room.publications.map(\.sid) == [video.sid, sound.sid])
      #expect(video.codec == .h264 && video.ports.isEmpty && sound.audioEncoding != nil)
      try await WHIPEndpoint.waitForAudioAndVideo(endpoint)
      let sent = video.statistics
      #expect(
        sent.framesEncoded >= 30 && sent.keyframes >= 1 && sent.packetsSent >= 30 && sent.bytesSent > 0, "\(sent)")
      #expect(sound.statistics.packetsSent > 0)
      #expect(!room.sdp.contains("m="), "a WHIP room's SDP has no media: its endpoint is what receivers open")

      await participant.unpublish(publication: video)
      #expect(video.state == .stopped && room.publications.map(\.sid) == [sound.sid])
      #expect(track.renderers.all.isEmpty, "the publication let go of the camera")
      await room.disconnect()
      #expect(sound.state == .stopped && room.publications.isEmpty)
      #expect(audio.renderers.all.isEmpty, "the publication let go of the microphone")
      try await endpoint.waitForOutput(within: 10, for: "two sessions deleted") { output in
        output.split(separator: "\n").filter { $0.hasPrefix("deleted session ") }.count == 2
      }
      try await audio.capturer?.stopCapture()
      try await track.capturer?.stopCapture()
    }
    await endpoint.stop()
  }

  /// Issue 25: a session that fails after it came up is reported. aiortc's endpoint killed says
  /// nothing to the peer (no DTLS close; `webrtcbin` checks no ICE consent, so its connection
  /// stays `connected`): only the endpoint's RTCP stops. The publication fails within 5 s and
  /// lets go of the camera.
  @Test func aPublicationWhoseEndpointIsKilledFailsWithin5Seconds() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start()
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      let publication = try await WHIPPublication(publishing: track, to: url)
      let events = publication.events
      try await endpoint.waitForOutput(containing: "frames 30", within: 20)
      await endpoint.stop()
      let killed = ContinuousClock.now
      let fault = try await Self.failure(of: events, within: 5)
      print("the killed endpoint's publication failed after \(ContinuousClock.now - killed): \(fault)")
      #expect(fault.message.contains("stopped answering"), "\(fault)")
      #expect(publication.state == .failed(fault) && publication.statistics.connectionState == "failed")
      try await withDeadline(5, "the failed publication to let go of the camera") {
        while !track.renderers.all.isEmpty { await Task.yield() }
      }
      await publication.stop()
      #expect(publication.state == .failed(fault), "stopping a failed publication keeps its failure")
      try await track.capturer?.stopCapture()
    }
  }

  /// The endpoint drops the session on its own (aiortc closes the peer connection: a DTLS
  /// close_notify, which `webrtcbin` ignores, and no more RTCP): the room's publication fails
  /// within 5 s, as an event of the publication the room made, and the session is deleted.
  @Test func aRoomPublicationWhoseSessionTheEndpointClosesFailsWithin5Seconds() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--close-after-30-frames"])
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      let room = Room()
      try await room.connect(to: url)
      let roomEvents = room.events
      let publication = try await #require(room.localParticipant).publish(videoTrack: track)
      let events = publication.events
      try await endpoint.waitForOutput(containing: "closed session", within: 20)
      let closed = ContinuousClock.now
      let fault = try await Self.failure(of: events, within: 5)
      print("the closed session's publication failed after \(ContinuousClock.now - closed): \(fault)")
      #expect(room.publications.first?.state == .failed(fault))
      // The room says it too.
      let said = try await withDeadline(5, "the room's event of the failure") { () -> (String, StreamState)? in
        for await case .publication(let sid, .state(let state)) in roomEvents { return (sid, state) }
        return nil
      }
      #expect(said?.0 == publication.sid && said?.1 == .failed(fault), "\(String(describing: said))")
      try await endpoint.waitForOutput(containing: "deleted session", within: 10)
      await room.disconnect()
      try await track.capturer?.stopCapture()
    }
    await endpoint.stop()
  }

  /// Issue 25: `disconnect()` forgets the destination, and with it the WHIP token and an SRTP
  /// key: the room holds none of them after, and publishing again needs a new `connect`.
  @Test func disconnectForgetsTheDestinationTokenAndKey() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--token", "s3cret"])
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      let room = Room()
      let participant = try #require(room.localParticipant)
      try await room.connect(to: url, options: Room.ConnectOptions(token: "s3cret"))
      _ = try await participant.publish(videoTrack: track)
      await room.disconnect()
      #expect(room.destination == nil, "the room still holds \(String(describing: room.destination))")
      do {
        _ = try await participant.publish(videoTrack: track)
        Issue.record("published to the forgotten WHIP endpoint")
      } catch let error as RevueError {
        #expect(error.kind == .invalidState && "\(error)".contains("connect the room first"), "\(error)")
      }
      let posts = try await endpoint.waitForOutput(containing: "deleted session", within: 10)
      #expect(posts.split(separator: "\n").filter { $0.hasPrefix("answered session") }.count == 1, "\(posts)")

      let key = try SRTPKey.random()
      let encoded = try #require(key.base64.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
      try await room.connect(to: URL(string: "srtp://127.0.0.1:\(FreePorts.rtp())?key=\(encoded)")!)
      await room.disconnect()
      #expect(room.destination == nil, "the room still holds \(String(describing: room.destination))")
      await #expect(throws: RevueError.self) { _ = try await participant.publish(videoTrack: track) }
      #expect(room.publications.isEmpty && track.renderers.all.isEmpty)
      try await track.capturer?.stopCapture()
    }
    await endpoint.stop()
  }

  /// Issue 25: an endpoint that trickles its answer a byte every half second forever, or sends a
  /// body that never ends, or announces and sends 100 MB, gets a one-line error within the
  /// exchange's deadline (3 s here, after the first frame), within 5 s in all, and the transfer
  /// ends: the server sees the client go (loopback is fast enough for the whole 100 MB to go
  /// first).
  @Test(arguments: [
    ("trickle", "no complete reply within 3.0 seconds"), ("flood", "over 256 KiB"), ("huge", "over 256 KiB"),
  ])
  func aHostileHTTPEndpointIsCutOff(_ mode: String, says: String) async throws {
    let (server, url) = try await WHIPEndpoint.hostile(mode)
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      let started = ContinuousClock.now
      do {
        _ = try await withDeadline(10, "the publication to give up") {
          try await WHIPPublication(publishing: track, to: url, timeout: .seconds(3))
        }
        Issue.record("published to a \(mode) endpoint")
      } catch let error as RevueError {
        print("\(mode): \(error) (\(ContinuousClock.now - started))")
        #expect(error.kind == .network && "\(error)".contains(says) && !"\(error)".contains("\n"), "\(error)")
      }
      #expect(ContinuousClock.now - started < .seconds(5))
      #expect(track.renderers.all.isEmpty, "the failed publication still holds the track")
      // The transfer ends when the client closes its connection, at the limit or the deadline
      // (within a second since issue 29's own client; seconds with URLSession, whose libcurl
      // read on until the cancel came through). The deadline only says that it ends.
      let said = try await server.waitForOutput(
        containing: "\(mode) ended after", within: 30 * TestEnvironment.timingAllowance)
      print("\(mode): \(said.split(separator: "\n").last ?? "")")
      try await track.capturer?.stopCapture()
    }
    await server.stop()
  }

  /// Issue 25: the bearer token never goes over plain http:// to another machine: refused with
  /// one line before anything is sent (0.0.0.0 is not loopback, though Linux connects it to the
  /// server listening on 127.0.0.1 here, which would have been told the token).
  @Test func aTokenIsNeverSentOverPlainHTTPToAnotherMachine() async throws {
    let (server, url) = try await WHIPEndpoint.hostile("record")
    let elsewhere = URL(string: url.absoluteString.replacingOccurrences(of: "127.0.0.1", with: "0.0.0.0"))!
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      for attempt in ["WHIPPublication", "Room"] {
        do {
          if attempt == "Room" {
            try await Room().connect(to: elsewhere, options: Room.ConnectOptions(token: "s3cret"))
          } else {
            _ = try await WHIPPublication(publishing: track, to: elsewhere, token: "s3cret", timeout: .seconds(3))
          }
          Issue.record("\(attempt): the token was taken for plain http to 0.0.0.0")
        } catch let error as RevueError {
          #expect(error.kind == .invalidInput && "\(error)".contains("plain http"), "\(attempt): \(error)")
          #expect(!"\(error)".contains("s3cret") && !"\(error)".contains("\n"), "\(attempt): \(error)")
        }
      }
      #expect(track.renderers.all.isEmpty)
      try await track.capturer?.stopCapture()
    }
    #expect(await server.stop().output == "listening \(url.port!)\n", "the server was sent something")
  }

  /// Issue 25: a session whose `Location` is on another origin is deleted without the token
  /// (as fetch sends no credentials across origins); the URLs in the log are redacted.
  @Test func aSessionOnAnotherOriginIsDeletedWithoutTheToken() async throws {
    let (other, otherURL) = try await WHIPEndpoint.hostile("record")
    let origin = "http://127.0.0.1:\(otherURL.port!)"
    let (endpoint, url) = try await WHIPEndpoint.start(["--token", "s3cret", "--location-origin", origin])
    let warnings = RevueLog.entries(from: .warning)
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      let publication = try await WHIPPublication(publishing: track, to: url, token: "s3cret")
      #expect(publication.resource.absoluteString.hasPrefix(origin))
      await publication.stop()
      let said = try await other.waitForOutput(containing: "DELETE /resource/", within: 10)
      #expect(said.contains("authorization=no"), "\(said)")
      try await track.capturer?.stopCapture()
    }
    // The other origin answers 404: the warning names the session without its query.
    let warning = try await withDeadline(10, "the DELETE's warning") {
      for await entry in warnings where entry.category == "WHIP" && entry.message.contains("DELETE") {
        return entry.message
      }
      return ""
    }
    #expect(
      warning.contains("\(origin)/resource/") && warning.contains("?…") && !warning.contains("secret-"), "\(warning)")
    await endpoint.stop()
    await other.stop()
  }

  /// Issue 25: a redirect to another origin loses the token (as fetch drops `Authorization`
  /// there): the endpoint redirected to, which wants it, refuses.
  @Test func aRedirectToAnotherOriginLosesTheToken() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--token", "s3cret"])
    let target = url.absoluteString.replacingOccurrences(of: "whip+", with: "")
    let (redirector, redirectURL) = try await WHIPEndpoint.hostile("redirect", [target])
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      do {
        _ = try await WHIPPublication(publishing: track, to: redirectURL, token: "s3cret", timeout: .seconds(3))
        Issue.record("the token followed the redirect to another origin")
      } catch let error as RevueError {
        #expect("\(error)".contains("answered 401"), "\(error)")
      }
      try await redirector.waitForOutput(containing: "POST /whip/camera authorization=yes", within: 5)
      try await track.capturer?.stopCapture()
    }
    await redirector.stop()
    await endpoint.stop()
  }

  /// Issue 25: URLs are redacted in errors: user info and query left out.
  @Test func urlsAreRedactedInErrors() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--status", "503"])
    let secret = URL(string: "whip+http://user:pass@127.0.0.1:\(url.port!)/whip/camera?token=abc#x")!
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      for bad in [secret, URL(string: "rtp://user:pass@127.0.0.1:5004/?token=abc")!] {
        do {
          _ = try await WHIPPublication(publishing: track, to: bad, timeout: .seconds(3))
          Issue.record("published to \(bad)")
        } catch let error as RevueError {
          let text = "\(error)"
          #expect(!text.contains("pass") && !text.contains("abc") && !text.contains("user"), "\(text)")
          #expect(text.contains("127.0.0.1:") && text.contains("?…"), "\(text)")
        }
      }
      try await track.capturer?.stopCapture()
    }
    await endpoint.stop()
  }

  /// Issue 25: a room over WHIP claims no adaptive bitrate nor FEC it cannot honour: the
  /// statistics say a fixed bitrate and retransmission only, and one warning per publication
  /// whose options ask for them (the default's adaptive bitrate) says so; none when they do not.
  @Test func aWHIPRoomClaimsNoAdaptiveBitrateNorFEC() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start()
    let warnings = RevueLog.entries(from: .warning)
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      let room = Room()
      let participant = try #require(room.localParticipant)
      try await room.connect(to: url)
      let asking = try await participant.publish(
        videoTrack: track, options: VideoPublishOptions(lossRecovery: [.nack, .fec]))
      try await endpoint.waitForOutput(containing: "frames 30", within: 20)
      for publication in [asking, asking] {
        let statistics = publication.statistics
        #expect(statistics.targetBitrate == nil && statistics.packetsRetransmitted == nil, "\(statistics)")
        guard case .whip(let whip) = publication.transport else { throw DeadlineExceeded("not a WHIP publication") }
        #expect(!whip.statistics.adaptiveBitrate && whip.statistics.lossRecovery == .nack)
      }
      await participant.unpublish(publication: asking)
      let plain = try await participant.publish(
        videoTrack: track, options: VideoPublishOptions(lossRecovery: [], adaptiveBitrate: false))
      await participant.unpublish(publication: plain)
      RevueLog.log(.warning, "WHIPPublicationTests", "the end of the publications")
      try await track.capturer?.stopCapture()
    }
    let said = try await withDeadline(10, "the warnings") {
      var said: [String] = []
      for await entry in warnings {
        if entry.category == "WHIPPublicationTests" { break }
        if entry.category == "WHIP" && entry.message.contains("adaptive bitrate") { said.append(entry.message) }
      }
      return said
    }
    #expect(said.count == 1, "\(said)")
    #expect(said.first?.contains("adaptive bitrate nor FEC") == true, "\(said)")
    await endpoint.stop()
  }

  /// The fault the first `.failed` state of `events` carries, within `seconds`.
  static func failure(of events: AsyncStream<StreamEvent>, within seconds: Double) async throws -> MediaFault {
    try await withDeadline(seconds, "the publication to fail") {
      for await event in events { if case .state(.failed(let fault)) = event { return fault } }
      throw DeadlineExceeded("the publication's events ended without a failure")
    }
  }

  /// Janus's VideoRoom through a WHIP front end: a subscriber of the room decodes the frames.
  @Test func janusVideoRoomTakesThePublication() async throws {
    try await Self.withJanusVideoRoom(1234) { url, subscribe in
      try await TestCameras.with(["usb-1080p-webcam"]) { devices in
        let track = try await Self.camera(devices[0])
        let publication = try await WHIPPublication(publishing: track, to: url, simulcast: false)
        let viewer = try await subscribe()
        try await viewer.waitForFrames(30, within: 20)
        await viewer.stop()
        await publication.stop()
        try await track.capturer?.stopCapture()
      }
    }
  }

  /// Simulcast to an SFU: a 1280×720 camera published to Janus's VideoRoom is offered in three
  /// layers told apart by their RIDs, and Janus takes them all; a subscriber decodes the full
  /// size (Janus's default), then each smaller layer it asks for: Janus routed every layer.
  /// Issue 26: a room capped at 700 kb/s, which Janus tells the publisher (REMB): of a 720p
  /// camera's three layers (1.7 Mb/s, 450 and 120 kb/s) the two that fit are sent and the full
  /// size is paused, within 5 s; the subscriber of the half size goes on decoding it.
  @Test func janusVideoRoomsCapPausesTheLayersItCannotCarry() async throws {
    try await Self.withJanusVideoRoom(1236, bitrate: 700_000) { url, subscribe in
      try await TestCameras.with(["usb-1080p-webcam"]) { devices in
        let track = LocalVideoTrack.createCameraTrack(
          options: CameraCaptureOptions(device: devices[0], dimensions: .h720_169, fps: 30))
        try await track.capturer?.startCapture()
        let start = ContinuousClock.now
        let publication = try await WHIPPublication(publishing: track, to: url)
        let changes = publication.layersSentChanges
        #expect(publication.layers.count == 3)
        // Janus raises its estimate to the cap over its first seconds: layers may pause below
        // the half size first, and come back.
        let fitting = [Dimensions.h360_169, .h180_169]
        if publication.layersSent.map(\.dimensions) != fitting {
          try await withDeadline(5, "the layers that fit 700 kb/s alone") {
            for await layers in changes {
              print("WHIP layers sent after \(ContinuousClock.now - start): \(layers.map(\.dimensions))")
              if layers.map(\.dimensions) == fitting { return }
            }
          }
        }
        #expect(publication.layersSent.map(\.dimensions) == fitting)
        let viewer = try await subscribe()
        try await viewer.choose(substream: 1)
        try await viewer.waitForFrames(10, width: 640, height: 360, within: 20)
        await viewer.stop()
        await publication.stop()
        try await track.capturer?.stopCapture()
      }
    }
  }

  @Test func janusVideoRoomTakesTheSimulcastLayers() async throws {
    try await Self.withJanusVideoRoom(1235) { url, subscribe in
      try await TestCameras.with(["usb-1080p-webcam"]) { devices in
        let track = LocalVideoTrack.createCameraTrack(
          options: CameraCaptureOptions(device: devices[0], dimensions: .h720_169, fps: 30))
        try await track.capturer?.startCapture()
        let publication = try await WHIPPublication(publishing: track, to: url)
        #expect(publication.layers.map(\.dimensions) == [.h720_169, .h360_169, .h180_169])
        let viewer = try await subscribe()
        try await viewer.waitForFrames(10, width: 1280, height: 720, within: 20)
        try await viewer.choose(substream: 0)
        try await viewer.waitForFrames(10, width: 320, height: 180, within: 20)
        try await viewer.choose(substream: 1)
        try await viewer.waitForFrames(10, width: 640, height: 360, within: 20)
        #expect(publication.statistics.framesEncoded >= 30)
        await viewer.stop()
        await publication.stop()
        try await track.capturer?.stopCapture()
      }
    }
  }

  /// Runs `body` with Janus's VideoRoom `room` behind a WHIP front end (`url`, to publish to)
  /// and `subscribe`, which joins the room as a subscriber of what was published; then waits
  /// for the front end to have deleted the session (`body` stops its publication) and stops
  /// both, with their logs recorded when anything failed.
  static func withJanusVideoRoom(
    _ room: Int, bitrate: Int? = nil,
    _ body: (_ url: URL, _ subscribe: () async throws -> JanusViewer) async throws -> Void
  ) async throws {
    let janus = try await Janus.start(plugins: ["videoroom"])
    let (frontEnd, url) = try await WHIPEndpoint.janusVideoRoom(janus, room: room, bitrate: bitrate)
    do {
      try await body(url) {
        let prefix = "published room \(room) feed "
        let said = try await frontEnd.waitForOutput(containing: prefix, within: 10)
        let feed = try #require(
          said.split(separator: "\n").first { $0.hasPrefix(prefix) }?.split(separator: " ").last.flatMap { Int($0) })
        return try await JanusViewer(janus, room: room, feed: feed)
      }
      try await frontEnd.waitForOutput(containing: "deleted session", within: 10)
    } catch {
      Issue.record("the front end said:\n\(await frontEnd.stop().error.suffix(2000))")
      Issue.record("Janus said:\n\(await janus.stop().output.suffix(2000))")
      throw error
    }
    await frontEnd.stop()
    await janus.stop()
  }

  /// Each bad endpoint, what the error must say, and how long it may take.
  static let badEndpoints: [(options: [String], token: String?, says: String)] = [
    (["--token", "s3cret"], nil, "answered 401"),
    (["--token", "s3cret"], "wrong", "answered 401"),
    (["--status", "503"], nil, "answered 503"),
    (["--malformed-answer"], nil, "without an SDP answer"),
    (["--unreachable"], nil, "did not come up"),
  ]

  @Test func badEndpointsGiveAClearErrorAndLeaveNothingRunning() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      for (options, token, says) in Self.badEndpoints {
        let (endpoint, url) = try await WHIPEndpoint.start(options)
        let started = ContinuousClock.now
        do {
          _ = try await WHIPPublication(publishing: track, to: url, token: token, timeout: .seconds(3))
          Issue.record("\(options): published")
        } catch let error as RevueError {
          print("WHIP endpoint \(options), token \(token ?? "none"): \(error) (\(ContinuousClock.now - started))")
          #expect(error.kind == .network, "\(options): \(error)")
          #expect("\(error)".contains(says), "\(options): \(error)")
        }
        // Each step has 3 s: the offer, the exchange, the connection.
        #expect(ContinuousClock.now - started < .seconds(12), "\(options)")
        #expect(track.renderers.all.isEmpty, "\(options): the failed publication still holds the track")
        if options == ["--unreachable"] {
          // The session the endpoint made is deleted.
          try await endpoint.waitForOutput(containing: "deleted session", within: 10)
        }
        await endpoint.stop()
      }
      // No endpoint at all, and a URL of another scheme.
      let nobody = URL(string: "whip+http://127.0.0.1:\(FreePorts.tcp())/whip/camera")!
      await #expect(throws: RevueError.self) { _ = try await WHIPPublication(publishing: track, to: nobody) }
      do {
        _ = try await WHIPPublication(publishing: track, to: URL(string: "rtp://127.0.0.1:5004")!)
        Issue.record("an rtp:// URL was taken")
      } catch let error as RevueError {
        #expect(error.kind == .invalidInput && "\(error)".contains("whip+https://"), "\(error)")
      }
      #expect(track.renderers.all.isEmpty)
      try await track.capturer?.stopCapture()
    }
  }

  /// Issues 25 and 26: the NACKs the offer announces are answered. aiortc drops 5% of the video
  /// packets that reach it, as a lossy path would, and asks for them again: retransmissions
  /// (RTX, in the offer with its SSRC group) come back for them, and at least 98 % of the frames
  /// sent are decoded with no freeze over 300 ms. Before, `webrtcbin` offered NACK and never
  /// answered one: 0 retransmissions.
  ///
  /// The default two layers at 640×480, of which aiortc takes the full size: it maps
  /// retransmissions to their stream by the SSRCs of the offer, and a simulcast offer that
  /// announced none had every retransmission dropped (84 % of the frames decoded, freezes of
  /// 630 ms).
  @Test(.wholeProcess) func theNACKsOfferedAreAnsweredWithRetransmissions() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--drop-percent", "5"])
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      let publication = try await WHIPPublication(publishing: track, to: url)
      try await endpoint.waitForOutput(containing: "frames 300 ", within: 30)
      // The camera stops; aiortc then says when it has decoded all that came.
      try await track.capturer?.stopCapture()
      let sent = publication.statistics.framesEncoded
      // An idle line printed after the stop: one printed before is a freeze mid-stream.
      let stopped = try await endpoint.waitForOutput(within: 1, for: "its output") { _ in true }.count
      let output = try await endpoint.waitForOutput(within: 20, for: "an idle line after the stop") {
        $0.dropFirst(stopped).contains("idle frames ")
      }
      let line = try #require(output.dropFirst(stopped).split(separator: "\n").last { $0.hasPrefix("idle frames ") })
      let words = line.split(separator: " ")
      func count(_ name: String) -> Int { words.firstIndex(of: Substring(name)).flatMap { Int(words[$0 + 1]) } ?? -1 }
      print("WHIP with 5% of the video dropped at aiortc: \(line), \(sent) frames sent")
      #expect(count("lost") > 0 && count("nacked") >= count("lost") / 2, "\(line)")
      #expect(count("retransmitted") >= count("lost") / 2, "\(line)")
      #expect(Double(count("frames")) >= 0.98 * Double(sent), "\(line), \(sent) frames sent")
      #expect((0...300).contains(count("longest-gap")), "\(line)")
      await publication.stop()
    }
    await endpoint.stop()
  }

  /// Issue 26: the sync signal's flash (the camera) and beep (the microphone), published in one
  /// WHIP session, reach aiortc in sync: each onset's RTP timestamp mapped to the sender's
  /// capture clock through its stream's RTCP sender reports (as a receiver lines streams up),
  /// each beep starts within ±10 ms of its flash.
  @Test(.wholeProcess) func aiortcGetsTheBeepWithTheFlash() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start(["--sync"])
    let microphone = try await VirtualDevices.microphone(name: "WHIP Sync", signal: .sync)
    defer { VirtualDevices.remove(microphone.id) }
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let track = try await Self.camera(devices[0])
      let audio = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: microphone))
      try await audio.capturer?.startCapture()
      let publication = try await WHIPPublication(publishing: track, audio: audio, to: url)
      let onsets = { @Sendable (output: String, kind: String) in
        output.split(separator: "\n").compactMap { line in
          line.hasPrefix("\(kind) ") ? Double(line.dropFirst(kind.count + 1)) : nil
        }
      }
      let output = try await endpoint.waitForOutput(within: 30, for: "7 flashes and 7 beeps") { output in
        onsets(output, "flash").count >= 7 && onsets(output, "beep").count >= 7
      }
      await publication.stop()
      try await audio.capturer?.stopCapture()
      try await track.capturer?.stopCapture()
      let found = SyncJudge.Onsets(flashes: onsets(output, "flash"), beeps: onsets(output, "beep"))
      let skews = found.skews()
      print("A/V skew over WHIP at aiortc (ms): \(skews.map { String(format: "%.1f", $0) })")
      #expect(skews.count >= 6, "flashes \(found.flashes), beeps \(found.beeps)")
      #expect(skews.allSatisfy { abs($0) <= 10 }, "skews \(skews) ms")
    }
    await endpoint.stop()
  }
}

import Foundation
import GStreamer
import RevueLab
import RevueProcess
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(1))) struct PublicationTests {
  init() { TestEnvironment.prepare() }

  /// Starts `gst-launch-1.0` with `arguments`.
  static func gstLaunch(_ arguments: String) throws -> ChildProcess {
    try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/gst-launch-1.0"), ["-q"] + arguments.split(separator: " ").map(String.init))
  }

  /// Publishes the virtual camera at `size` with `codec`, writes the room's SDP to a file any
  /// user can read, starts `player` on it, then the camera; returns what `played` says of the
  /// player.
  static func roomSDPPlays(
    _ codec: VideoCodec, size: Dimensions, in player: (URL) throws -> ChildProcess,
    played: (ChildProcess) async throws -> Bool
  ) async throws -> Bool {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let (room, participant, capturer) = try await TestCameras.sendingRoom(
        to: port, camera: devices[0], dimensions: size)
      _ = try await participant.publish(
        videoTrack: participant.cameraTrack, options: VideoPublishOptions(preferredCodec: codec))
      let file = FileManager.default.temporaryDirectory.appendingPathComponent("revue-room-\(port).sdp")
      try room.sdp.write(to: file, atomically: true, encoding: .utf8)
      defer { try? FileManager.default.removeItem(at: file) }
      try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
      let playing = try player(file)
      try await capturer.startCapture()
      let result = try await played(playing)
      try await capturer.stopCapture()
      await room.disconnect()
      return result
    }
  }

  @Test(.tier(.interop), arguments: [VideoCodec.vp8, .h264]) func ffmpegPlaysTheRoomSDP(_ codec: VideoCodec)
    async throws
  {
    let played = try await Self.roomSDPPlays(codec, size: .h720_169) { file in
      try ChildProcess(
        URL(fileURLWithPath: "/usr/bin/ffmpeg"),
        [
          "-hide_banner", "-loglevel", "fatal", "-protocol_whitelist", "file,udp,rtp", "-i", file.path,
          "-frames:v", "30", "-f", "null", "-",
        ])
    } played: { ffmpeg in
      try await ffmpeg.exit(within: 30).status == 0
    }
    #expect(played, "ffmpeg did not decode 30 frames")
  }

  /// Starts VLC on `sdp` with no window and no sound (as `nobody` when this is root: VLC refuses
  /// to run as root); it says on standard error when it decodes a picture.
  ///
  /// Debian's VLC is built without live555, and its own SDP reader takes neither RTP/AVPF nor
  /// dynamic payload types: VLC reads the SDP with its FFmpeg demuxer (`--demux avformat`).
  static func vlc(playing sdp: URL) throws -> ChildProcess {
    let vlc = ["/usr/bin/cvlc", "-I", "dummy", "-vv", "--vout", "dummy", "--aout", "dummy", "--demux", "avformat"]
    return getuid() == 0
      ? try ChildProcess(
        URL(fileURLWithPath: "/usr/bin/setpriv"),
        ["--reuid=nobody", "--regid=nogroup", "--clear-groups"] + vlc + [sdp.path])
      : try ChildProcess(URL(fileURLWithPath: vlc[0]), Array(vlc.dropFirst()) + [sdp.path])
  }

  @Test(.tier(.interop), arguments: [VideoCodec.vp8, .h264]) func vlcPlaysTheRoomSDP(_ codec: VideoCodec) async throws {
    let played = try await Self.roomSDPPlays(codec, size: .h360_169) {
      try Self.vlc(playing: $0)
    } played: { vlc in
      // Throws, quoting VLC, when it ends or 30 s pass without a picture.
      try await vlc.waitForError(containing: "Received first picture", within: 30)
      await vlc.stop()
      return true
    }
    #expect(played, "VLC decoded no picture")
  }

  @Test(.tier(.pipeline), arguments: [VideoCodec.vp8, .h264]) func gstLaunchPlaysTheRoomSDP(_ codec: VideoCodec)
    async throws
  {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let port = FreePorts.rtp()
      let (room, participant, capturer) = try await TestCameras.sendingRoom(
        to: port, camera: devices[0], dimensions: .h360_169)
      let publication = try await participant.publish(
        videoTrack: participant.cameraTrack, options: VideoPublishOptions(preferredCodec: codec))
      #expect(publication.port == port)
      let sdp = room.sdp
      #expect(sdp.contains("m=video \(port) RTP/AVPF 96"))
      #expect(sdp.contains("a=rtpmap:96 \(codec == .vp8 ? "VP8" : "H264")/90000"))
      let file = FileManager.default.temporaryDirectory.appendingPathComponent("revue-\(port).sdp")
      try sdp.write(to: file, atomically: true, encoding: .utf8)
      defer { try? FileManager.default.removeItem(at: file) }
      // A plain gst-launch receiver built from the SDP: it exits after 30 decoded frames.
      let depay = codec == .vp8 ? "rtpvp8depay ! vp8dec" : "rtph264depay ! avdec_h264"
      let receiver = try Self.gstLaunch(
        "filesrc location=\(file.path) ! sdpdemux latency=50 ! \(depay) ! fakesink num-buffers=30 sync=false")
      try await capturer.startCapture()
      let received = try await receiver.exit(within: 30)
      #expect(received.status == 0, "\(received.error)")
      let statistics = publication.statistics
      #expect(statistics.framesEncoded >= 30)
      #expect(statistics.keyframes >= 1)
      #expect(statistics.packetsSent >= 30 && statistics.bytesSent > 1000)
      try await capturer.stopCapture()
      await participant.unpublish(publication: publication)
    }
  }

  @Test(.tier(.pipeline)) func badDestinationsAreRefusedBeforeAnythingStarts() async throws {
    let room = Room()
    for (url, words) in [
      ("http://127.0.0.1:5004", "use rtp://HOST:PORT"), ("rtp://127.0.0.1", "even port"),
      ("rtp://127.0.0.1:5005", "even port"), ("rtp://no-such-host.invalid:5004", "cannot resolve host"),
    ] {
      await #expect {
        try await room.connect(to: URL(string: url)!)
      } throws: { error in "\(error)".contains(words) }
    }
    let participant = try #require(room.localParticipant)
    await #expect {
      _ = try await participant.publish(videoTrack: LocalVideoTrack.createBufferTrack())
    } throws: { error in "\(error)".contains("connect the room first") }
    #expect(room.publications.isEmpty)
  }

  @Test(.tier(.pipeline)) func bufferTrackPublishesAtTheBitrateForItsSizeAndUnpublishes() async throws {
    let room = Room()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp())")!)
    let track = LocalVideoTrack.createBufferTrack(name: "frames")
    let capturer = try #require(track.capturer as? BufferCapturer)
    let publication = try await room.localParticipant!.publish(videoTrack: track)
    #expect(publication.encoding == VideoEncoding(maxBitrate: 1_500_000, maxFps: 30))  // 720p, balanced
    try await capturer.startCapture()
    let frame = BufferCapturerTests.frame(.nv12, 320, 180)
    for _ in 0..<10 { capturer.capture(frame) }
    await room.localParticipant!.unpublish(publication: publication)
    #expect(room.publications.isEmpty)
    try await capturer.stopCapture()
  }

  @Test(.tier(.pipeline), arguments: [VideoCodec.h264, .vp8]) func pushedNV12FramesReachTheH264EncoderWithoutACopy(
    _ codec: VideoCodec
  ) async throws {
    let port = FreePorts.rtp()
    let sending = Room()
    try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let track = LocalVideoTrack.createBufferTrack(name: "frames")
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
    LocalTrackPublication.countsCopiedBytes = true
    let publication = try await sending.localParticipant!.publish(
      videoTrack: track, options: VideoPublishOptions(preferredCodec: codec))
    let receiving = Room()
    let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)?codec=\(codec)")!)
    let renderer = FrameStream()
    remote.videoTrack!.add(videoRenderer: renderer)
    let frame = BufferCapturerTests.frame(.nv12, 640, 360)
    let pushing = Task {
      while !Task.isCancelled {
        capturer.capture(frame)
        await Task.yield()
      }
    }
    _ = try await renderer.next { _ in renderer.count >= 3 }
    pushing.cancel()
    let statistics = publication.statistics
    #expect(statistics.framesEncoded >= 3)
    if codec == .h264 {
      #expect(statistics.bytesCopiedToEncoder == 0)
    } else {
      // vp8enc takes only I420: every NV12 frame is converted on the way.
      let copied = try #require(statistics.bytesCopiedToEncoder)
      #expect(copied > 0 && copied % (640 * 360 * 3 / 2) == 0)
    }
    try await capturer.stopCapture()
    await sending.disconnect()
    await receiving.disconnect()
  }

  @Test(.tier(.pipeline)) func receiverReportsReachTheStatistics() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let (room, participant, capturer) = try await TestCameras.sendingRoom(
        to: port, camera: devices[0], dimensions: .h360_169)
      let publication = try await participant.publish(videoTrack: participant.cameraTrack)
      #expect(publication.localRTCPPort > 0)
      // A plain rtpbin receiver that sends its reports back to the publication's RTCP socket.
      let receiver = try Self.gstLaunch(
        "rtpbin name=bin udpsrc port=\(port) caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96"
          + " ! bin.recv_rtp_sink_0 bin. ! rtpvp8depay ! vp8dec ! fakesink num-buffers=900 sync=false"
          + " udpsrc port=\(port + 1) ! bin.recv_rtcp_sink_0"
          + " bin.send_rtcp_src_0 ! udpsink host=127.0.0.1 port=\(publication.localRTCPPort) sync=false async=false")
      let reports = publication.receiverReports()
      try await capturer.startCapture()
      try await withDeadline(20, "a receiver report with a round-trip time") {
        for await layer in reports where publication.statistics(layer: layer)?.roundTripTime != nil { return }
      }
      let statistics = publication.statistics
      // Loopback loses nothing (the count is negative by one when the first packet came before the report's base).
      #expect(try #require(statistics.packetsLost) <= 0)
      #expect(statistics.fractionLost == 0)
      let roundTrip = try #require(statistics.roundTripTime)
      #expect(roundTrip < .milliseconds(100))
      await receiver.stop()
      try await capturer.stopCapture()
      await participant.unpublish(publication: publication)
      withExtendedLifetime(room) {}  // the room stays until its publication is gone
    }
  }

  @Test(.tier(.pipeline)) func opusAudioBesideVideoTakesTheNextPortPair() async throws {
    let microphone = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(microphone.id) }
    let room = Room()
    let participant = try #require(room.localParticipant)
    let port = FreePorts.rtp(pairs: 2)  // the video and the audio
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let video = try await participant.publish(videoTrack: LocalVideoTrack.createBufferTrack())
    let track = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: microphone))
    let audio = try await participant.publish(audioTrack: track, options: AudioPublishOptions(dtx: false))
    #expect(video.port == port && audio.port == port + 2)
    #expect(audio.audioEncoding == AudioEncoding(maxBitrate: 40_000))  // the preset's bitrate
    #expect(room.sdp.contains("m=audio \(port + 2) RTP/AVPF 111\r\na=rtpmap:111 opus/48000/2"))
    let receiver = try Self.gstLaunch(
      "udpsrc port=\(port + 2) caps=application/x-rtp,media=audio,clock-rate=48000,encoding-name=OPUS,payload=111"
        + " ! rtpjitterbuffer latency=50 ! rtpopusdepay ! opusdec ! fakesink num-buffers=25 sync=false")
    try await track.capturer?.startCapture()
    let received = try await receiver.exit(within: 30)
    #expect(received.status == 0, "\(received.error)")
    #expect(audio.statistics.packetsSent >= 25)
    try await track.capturer?.stopCapture()
    await room.disconnect()
  }

  /// The two ways a receiver asks for a keyframe.
  enum KeyframeRequest: CaseIterable {
    /// A picture loss indication (RFC 4585: PSFB, FMT 1).
    case pli
    /// A full intra request (RFC 5104: PSFB, FMT 4), with its sequence number.
    case fir
  }

  /// Sends an RTCP keyframe request about `ssrc` to `port` on loopback.
  static func sendKeyframeRequest(_ request: KeyframeRequest, about ssrc: UInt32, to port: Int) {
    let target = bigEndianBytes(ssrc)
    let sender: [UInt8] = [0x12, 0x34, 0x56, 0x78]
    let packet =
      switch request {
      case .pli: [0x81, 206, 0x00, 0x02] + sender + target
      // rtpsession takes a FIR only from a sender it knows: an empty receiver report first.
      case .fir:
        [0x80, 201, 0x00, 0x01] + sender + [0x84, 206, 0x00, 0x04] + sender + [0, 0, 0, 0] + target + [1, 0, 0, 0]
      }
    (try? UDPSender())?.send(packet, to: "127.0.0.1", port: port)
  }

  /// The camera's frames are its clock (a keyframe within 20 frames of the request), which tests
  /// running beside it would slow: it runs alone.
  @Test(.tier(.pipeline), .wholeProcess, arguments: KeyframeRequest.allCases) func aKeyframeRequestGetsAKeyframeAtOnce(
    _ request: KeyframeRequest
  ) async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let room = Room()
      try await room.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp())")!)
      let participant = try #require(room.localParticipant)
      let capturer = try #require(participant.cameraTrack.capturer as? CameraCapturer)
      _ = try await capturer.set(options: CameraCaptureOptions(device: devices[0], dimensions: .h720_169))
      let renderer = FrameStream()
      participant.cameraTrack.add(videoRenderer: renderer)
      let publication = try await participant.publish(videoTrack: participant.cameraTrack)
      try await capturer.startCapture()
      // The camera runs at 30 fps and the periodic keyframes come every 60 frames: the frames
      // rendered are the clock.
      _ = try await renderer.next { _ in renderer.count >= 10 }
      #expect(publication.statistics.keyframes == 1)
      Self.sendKeyframeRequest(request, about: publication.ssrc, to: publication.localRTCPPort)
      let sent = renderer.count
      _ = try await renderer.next { _ in renderer.count >= sent + 20 }
      #expect(publication.statistics.keyframes >= 2, "no keyframe within 20 frames of the \(request)")
      #expect(renderer.count < 60)
      try await capturer.stopCapture()
      await room.disconnect()
    }
  }
}

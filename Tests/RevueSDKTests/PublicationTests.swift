import Foundation
import GStreamer
import RevueSDK
import RevueTestSupport
import Synchronization
import Testing

@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(1))) struct PublicationTests {
  init() { TestEnvironment.prepare() }

  /// An even port pair that nothing on this machine listens on now.
  static func freePort() -> Int { 2 * Int.random(in: 12_000..<30_000) }

  /// Starts `gst-launch-1.0` with `arguments`; the task returns its exit status, and cancelling
  /// it ends the process.
  static func gstLaunch(_ arguments: String) throws -> Task<Int32, Never> {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
    process.arguments = ["-q"] + arguments.split(separator: " ").map(String.init)
    let (exits, continuation) = AsyncStream.makeStream(of: Int32.self)
    process.terminationHandler = { continuation.yield($0.terminationStatus) }
    try process.run()
    return Task {
      await withTaskCancellationHandler {
        for await status in exits { return status }
        return -1
      } onCancel: {
        kill(process.processIdentifier, SIGKILL)  // SIGTERM: blocked in a child of a Dispatch thread
      }
    }
  }

  /// Publishes the virtual camera at `size` with `codec`, writes the room's SDP to a file any
  /// user can read, starts `player` on it, then the camera; returns what the player's task says.
  static func roomSDPPlays(
    _ codec: VideoCodec, size: Dimensions, in player: (URL) throws -> Task<Bool, Never>
  ) async throws -> Bool {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = Self.freePort()
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
      let played = await playing.value
      try await capturer.stopCapture()
      await room.disconnect()
      return played
    }
  }

  @Test(arguments: [VideoCodec.vp8, .h264]) func ffmpegPlaysTheRoomSDP(_ codec: VideoCodec) async throws {
    let played = try await Self.roomSDPPlays(codec, size: .h720_169) { file in
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
      process.arguments = [
        "-hide_banner", "-loglevel", "fatal", "-protocol_whitelist", "file,udp,rtp", "-i", file.path,
        "-frames:v", "30", "-f", "null", "-",
      ]
      let (exits, continuation) = AsyncStream.makeStream(of: Int32.self)
      process.terminationHandler = { continuation.yield($0.terminationStatus) }
      try process.run()
      return Task {
        for await status in exits { return status == 0 }
        return false
      }
    }
    #expect(played, "ffmpeg did not decode 30 frames")
  }

  /// Starts VLC on `sdp` with no window and no sound (as `nobody` when this is root: VLC refuses
  /// to run as root). The task returns once VLC says it decoded a picture, and ends VLC then.
  ///
  /// Debian's VLC is built without live555, and its own SDP reader takes neither RTP/AVPF nor
  /// dynamic payload types: VLC reads the SDP with its FFmpeg demuxer (`--demux avformat`).
  static func vlcShowsAPicture(playing sdp: URL) throws -> Task<Bool, Never> {
    let process = Process()
    let vlc = ["/usr/bin/cvlc", "-I", "dummy", "-vv", "--vout", "dummy", "--aout", "dummy", "--demux", "avformat"]
    if getuid() == 0 {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
      process.arguments = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"] + vlc + [sdp.path]
    } else {
      process.executableURL = URL(fileURLWithPath: vlc[0])
      process.arguments = Array(vlc.dropFirst()) + [sdp.path]
    }
    let log = Pipe()
    process.standardError = log
    process.standardOutput = FileHandle.nullDevice
    let (pictures, continuation) = AsyncStream.makeStream(of: Bool.self)
    let seen = Mutex(Data())
    log.fileHandleForReading.readabilityHandler = { handle in
      let chunk = handle.availableData
      guard !chunk.isEmpty else {  // VLC ended
        continuation.yield(false)
        return
      }
      let decoded = seen.withLock { text in
        text.append(chunk)
        return text.range(of: Data("Received first picture".utf8)) != nil
      }
      if decoded { continuation.yield(true) }
    }
    try process.run()
    return Task {
      defer {
        log.fileHandleForReading.readabilityHandler = nil
        kill(process.processIdentifier, SIGKILL)  // SIGTERM: blocked in a child of a Dispatch thread
      }
      for await decoded in pictures { return decoded }
      return false
    }
  }

  @Test(arguments: [VideoCodec.vp8, .h264]) func vlcPlaysTheRoomSDP(_ codec: VideoCodec) async throws {
    let played = try await Self.roomSDPPlays(codec, size: .h360_169) { try Self.vlcShowsAPicture(playing: $0) }
    #expect(played, "VLC decoded no picture")
  }

  @Test(arguments: [VideoCodec.vp8, .h264]) func gstLaunchPlaysTheRoomSDP(_ codec: VideoCodec) async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let port = Self.freePort()
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
      #expect(await receiver.value == 0)
      let statistics = publication.statistics
      #expect(statistics.framesEncoded >= 30)
      #expect(statistics.keyframes >= 1)
      #expect(statistics.packetsSent >= 30 && statistics.bytesSent > 1000)
      try await capturer.stopCapture()
      await participant.unpublish(publication: publication)
    }
  }

  @Test func badDestinationsAreRefusedBeforeAnythingStarts() async throws {
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

  @Test func bufferTrackPublishesAtTheBitrateForItsSizeAndUnpublishes() async throws {
    let room = Room()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(Self.freePort())")!)
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

  @Test(arguments: [VideoCodec.h264, .vp8]) func pushedNV12FramesReachTheH264EncoderWithoutACopy(
    _ codec: VideoCodec
  ) async throws {
    let port = Self.freePort()
    let sending = Room()
    try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let track = LocalVideoTrack.createBufferTrack(name: "frames")
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
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
    _ = await renderer.next { _ in renderer.count >= 3 }
    pushing.cancel()
    let statistics = publication.statistics
    #expect(statistics.framesEncoded >= 3)
    if codec == .h264 {
      #expect(statistics.bytesCopiedToEncoder == 0)
    } else {
      // vp8enc takes only I420: every NV12 frame is converted on the way.
      #expect(statistics.bytesCopiedToEncoder > 0 && statistics.bytesCopiedToEncoder % (640 * 360 * 3 / 2) == 0)
    }
    try await capturer.stopCapture()
    await sending.disconnect()
    await receiving.disconnect()
  }

  @Test func receiverReportsReachTheStatistics() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = Self.freePort()
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
      for await layer in reports where publication.statistics(layer: layer)?.roundTripTime != nil { break }
      let statistics = publication.statistics
      // Loopback loses nothing (the count is negative by one when the first packet came before the report's base).
      #expect(try #require(statistics.packetsLost) <= 0)
      #expect(statistics.fractionLost == 0)
      let roundTrip = try #require(statistics.roundTripTime)
      #expect(roundTrip < .milliseconds(100))
      receiver.cancel()
      try await capturer.stopCapture()
      await participant.unpublish(publication: publication)
      withExtendedLifetime(room) {}  // the room stays until its publication is gone
    }
  }

  @Test func opusAudioBesideVideoTakesTheNextPortPair() async throws {
    let microphone = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(microphone.id) }
    let room = Room()
    let participant = try #require(room.localParticipant)
    let port = Self.freePort()
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
    #expect(await receiver.value == 0)
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
    let target = withUnsafeBytes(of: ssrc.bigEndian) { Array($0) }
    let sender: [UInt8] = [0x12, 0x34, 0x56, 0x78]
    let packet =
      switch request {
      case .pli: [0x81, 206, 0x00, 0x02] + sender + target
      // rtpsession takes a FIR only from a sender it knows: an empty receiver report first.
      case .fir:
        [0x80, 201, 0x00, 0x01] + sender + [0x84, 206, 0x00, 0x04] + sender + [0, 0, 0, 0] + target + [1, 0, 0, 0]
      }
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        sendto(fd, packet, packet.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }

  /// The camera's frames are its clock (a keyframe within 20 frames of the request), which tests
  /// running beside it would slow: it runs alone.
  @Test(.wholeProcess, arguments: KeyframeRequest.allCases) func aKeyframeRequestGetsAKeyframeAtOnce(
    _ request: KeyframeRequest
  ) async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let room = Room()
      try await room.connect(to: URL(string: "rtp://127.0.0.1:\(Self.freePort())")!)
      let participant = try #require(room.localParticipant)
      let capturer = try #require(participant.cameraTrack.capturer as? CameraCapturer)
      _ = try await capturer.set(options: CameraCaptureOptions(device: devices[0], dimensions: .h720_169))
      let renderer = FrameStream()
      participant.cameraTrack.add(videoRenderer: renderer)
      let publication = try await participant.publish(videoTrack: participant.cameraTrack)
      try await capturer.startCapture()
      // The camera runs at 30 fps and the periodic keyframes come every 60 frames: the frames
      // rendered are the clock.
      _ = await renderer.next { _ in renderer.count >= 10 }
      #expect(publication.statistics.keyframes == 1)
      Self.sendKeyframeRequest(request, about: publication.ssrc, to: publication.localRTCPPort)
      let sent = renderer.count
      _ = await renderer.next { _ in renderer.count >= sent + 20 }
      #expect(publication.statistics.keyframes >= 2, "no keyframe within 20 frames of the \(request)")
      #expect(renderer.count < 60)
      try await capturer.stopCapture()
      await room.disconnect()
    }
  }
}

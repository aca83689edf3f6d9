import Foundation
import GStreamer
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@testable import RevueSDK

@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(1))) struct ReceiveTests {
  init() { TestEnvironment.prepare() }

  /// Sends `count` datagrams of garbage to `port` on loopback.
  static func sendGarbage(to port: Int, count: Int) {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let junk = [UInt8](repeating: 0x5A, count: 200)
    for _ in 0..<count {
      _ = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          sendto(fd, junk, junk.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    }
  }

  @Test(.tier(.pipeline)) func senderAndReceiverInOneProcessSurviveGarbageAndARestart() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let receiving = Room()
      let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
      let renderer = FrameStream()
      remote.videoTrack!.add(videoRenderer: renderer)

      let (sending, participant, capturer) = try await TestCameras.sendingRoom(
        to: port, camera: devices[0], dimensions: .h360_169)
      try await capturer.startCapture()
      var publication = try await participant.publish(videoTrack: participant.cameraTrack)
      let first = try await renderer.next()
      #expect(first.dimensions == capturer.dimensions)

      // Garbage on the port: counted and dropped, the stream goes on.
      Self.sendGarbage(to: port, count: 20)
      let before = renderer.count
      _ = try await renderer.next { _ in renderer.count > before + 10 }
      #expect(remote.videoTrack!.statistics.invalidPackets == 20)

      // The sender restarts: a new SSRC and new sequence numbers; the receiver follows.
      await participant.unpublish(publication: publication)
      publication = try await participant.publish(videoTrack: participant.cameraTrack)
      let restarted = renderer.count
      _ = try await renderer.next { _ in renderer.count > restarted + 10 }
      let statistics = remote.videoTrack!.statistics
      #expect(statistics.framesDecoded > 20)
      #expect(statistics.packetsReceived > 20 && statistics.bytesReceived > 1000)
      try await capturer.stopCapture()
      await sending.disconnect()
      await receiving.disconnect()
    }
  }

  @Test(.tier(.pipeline)) func receivingFromAPlainGstLaunchSender() async throws {
    let port = FreePorts.rtp()
    let room = Room()
    let remote = try await room.listen(on: URL(string: "rtp://127.0.0.1:\(port)?codec=h264")!)
    let renderer = FrameStream()
    remote.videoTrack!.add(videoRenderer: renderer)
    let sender = try PublicationTests.gstLaunch(
      "videotestsrc is-live=true num-buffers=45 ! video/x-raw,width=320,height=240 ! x264enc tune=zerolatency"
        + " key-int-max=15 ! rtph264pay pt=96 config-interval=-1 ! udpsink host=127.0.0.1 port=\(port)")
    let frame = try await renderer.next()
    #expect(frame.dimensions == Dimensions(width: 320, height: 240))
    #expect(remote.videoTrack!.codec == .h264)
    _ = try await sender.exit(within: 30)
    await room.disconnect()
  }

  @Test(.tier(.pipeline)) func aPortInUseOrABadURLIsAClearError() async throws {
    let port = FreePorts.rtp(pairs: 2)
    let room = Room()
    _ = try await room.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
    await #expect {
      try await Room().listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
    } throws: { error in "\(error)".contains("is the port in use") }
    await #expect {
      try await Room().listen(on: URL(string: "udp://127.0.0.1:\(port)")!)
    } throws: { error in "\(error)".contains("use rtp://ADDRESS:PORT") }
    await #expect {
      try await Room().listen(on: URL(string: "rtp://127.0.0.1:\(port + 2)?codec=mpeg2")!)
    } throws: { error in "\(error)".contains("unknown codec 'mpeg2'") }
    await room.disconnect()
  }

  @Test(.tier(.pipeline)) func mutedTrackSendsItsPlaceholderAndThePublicationGoesOn() async throws {
    let port = FreePorts.rtp()
    let receiving = Room()
    let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
    let renderer = FrameStream()
    remote.videoTrack!.add(videoRenderer: renderer)
    let sending = Room()
    try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let track = LocalVideoTrack.createBufferTrack()
    track.mutePlaceholder = BufferCapturerTests.frame(.nv12, 160, 90)
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
    _ = try await sending.localParticipant!.publish(videoTrack: track)
    let frame = BufferCapturerTests.frame(.nv12, 320, 180)
    let pusher = Task {
      while !Task.isCancelled {
        capturer.capture(frame)
        await Task.yield()
      }
    }
    _ = try await renderer.next { $0.dimensions == Dimensions(width: 320, height: 180) }
    try await track.mute()
    _ = try await renderer.next { $0.dimensions == Dimensions(width: 160, height: 90) }
    try await track.unmute()
    _ = try await renderer.next { $0.dimensions == Dimensions(width: 320, height: 180) }
    pusher.cancel()
    try await capturer.stopCapture()
    await sending.disconnect()
    await receiving.disconnect()
  }

  @Test(.tier(.pipeline)) func cameraTurnedOffSendsThePlaceholder() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let receiving = Room()
      let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
      let renderer = FrameStream()
      remote.videoTrack!.add(videoRenderer: renderer)
      let sending = Room()
      try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
      let participant = try #require(sending.localParticipant)
      let capturer = try #require(participant.cameraTrack.capturer as? CameraCapturer)
      _ = try await capturer.set(options: CameraCaptureOptions(device: devices[0], dimensions: .h720_169))
      participant.cameraTrack.mutePlaceholder = BufferCapturerTests.frame(.nv12, 160, 90)
      _ = try await participant.publish(videoTrack: participant.cameraTrack)
      participant.setCamera(enabled: true)
      _ = try await renderer.next { $0.dimensions == .h720_169 }
      participant.setCamera(enabled: false)
      _ = try await renderer.next { $0.dimensions == Dimensions(width: 160, height: 90) }
      participant.setCamera(enabled: true)
      _ = try await renderer.next { $0.dimensions == .h720_169 }
      participant.setCamera(enabled: false)
      await sending.disconnect()
      await receiving.disconnect()
    }
  }

  /// ffmpeg, not Revue, sends: its SDP puts Opus on payload type 97 (and here H.264 on 102),
  /// and each stream on a port of its own, apart from the other's. Both are decoded: frames of
  /// ffmpeg's picture, and its 1 kHz sine, by its level and its pitch.
  @Test(.tier(.interop), arguments: zip([VideoCodec.vp8, .h264], [96, 102]))
  func ffmpegsSDPIsReceivedUnderItsPayloadTypes(
    _ codec: VideoCodec, _ payloadType: Int
  ) async throws {
    let first = FreePorts.rtp(pairs: 4)
    let (videoPort, audioPort) = (first, first + 6)
    let sender = try await FFmpegRTPSender.start(
      codec: codec.rawValue, videoPort: videoPort, videoPayloadType: payloadType == 96 ? nil : payloadType,
      audioPort: audioPort)
    #expect(sender.sdp.contains("m=video \(videoPort) RTP/AVP \(payloadType)\r\n"), "\(sender.sdp)")
    #expect(sender.sdp.contains("m=audio \(audioPort) RTP/AVP 97\r\n"), "\(sender.sdp)")
    #expect(sender.sdp.contains("a=rtpmap:97 opus/48000/2"), "\(sender.sdp)")
    let room = Room()
    let remote = try await room.listen(sdp: sender.sdp, on: "127.0.0.1")
    let frames = FrameStream()
    remote.videoTrack?.add(videoRenderer: frames)
    let sound = AudioStream()
    remote.audioTrack?.add(audioRenderer: sound)
    #expect(remote.videoTrack?.codec == codec)
    // ffmpeg answers no keyframe request: the first frame comes with its next keyframe (1 s).
    let frame = try await frames.next("a frame of ffmpeg's \(codec) on payload type \(payloadType)")
    #expect(frame.dimensions == Dimensions(width: 320, height: 240))
    let tone = try await Self.tone(of: sound)
    #expect(tone.peak > 3_000 && tone.peak < 5_000, "the sine's level (4096): peak \(tone.peak)")
    #expect(abs(tone.hertz - 1_000) < 20, "the sine's pitch: \(tone.hertz) Hz")
    _ = try await frames.next { _ in frames.count >= 10 }
    await room.disconnect()
    await sender.process.stop()
  }

  /// The peak and the pitch of 200 ms of decoded sound after the first buffer that is not silent
  /// (one peak over 1000), within 20 s; the pitch from the zero crossings of the first channel.
  static func tone(of sound: AudioStream) async throws -> (peak: Int, hertz: Double) {
    let buffers = sound.buffers
    return try await withDeadline(20, "200 ms of decoded sound") {
      var (peak, crossings, frames) = (0, 0, 0)
      var last: Int?
      for await buffer in buffers {
        guard let samples = buffer.int16Samples else { continue }
        let channel = stride(from: 0, to: samples.count, by: buffer.channelCount).map { Int(samples[$0]) }
        let loudest = channel.map(abs).max() ?? 0
        // The first buffer that is not silent may start with silence or concealment.
        guard let previous = last else {
          if loudest > 1_000 { last = channel.last }
          continue
        }
        let joined = [previous] + channel
        peak = max(peak, loudest)
        crossings += zip(joined, joined.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        frames += channel.count
        last = channel.last
        if frames >= buffer.sampleRate / 5 {
          return (peak, Double(crossings) / 2 * Double(buffer.sampleRate) / Double(frames))
        }
      }
      throw CancellationError()
    }
  }

  /// What an SDP gives is taken as it says: the media's payload type (the first of the `m=`
  /// line Revue decodes), RTX by its `apt`, ULPFEC and its RTX, Opus's channels and
  /// `sprop-stereo`; a browser's offer, whose first video payload type is VP9.
  @Test(.tier(.interop)) func payloadTypesComeFromTheSDP() throws {
    let sdp = """
      v=0
      m=video 5004 UDP/TLS/RTP/SAVPF 98 99 100 101 127 103 125 107
      a=rtpmap:98 VP9/90000
      a=rtpmap:99 rtx/90000
      a=fmtp:99 apt=98
      a=rtpmap:100 VP8/90000
      a=rtpmap:101 rtx/90000
      a=fmtp:101 apt=100;rtx-time=3000
      a=rtpmap:127 red/90000
      a=rtpmap:125 ulpfec/90000
      a=rtpmap:103 H264/90000
      a=fmtp:103 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f
      a=rtpmap:107 rtx/90000
      a=fmtp:107 apt=125
      m=audio 5008 RTP/AVP 0 109
      a=rtpmap:109 OPUS/48000/2
      a=fmtp:109 minptime=10; useinbandfec=1; sprop-stereo=1
      """
    let media = try SDPMedia.parse(sdp)
    #expect(media.map(\.kind) == [.video(.vp8), .opus(channels: 2, stereo: true)])
    #expect(media.map(\.port) == [5004, 5008])
    #expect(media[0].payloadTypes == RTPPayloadTypes(media: 100, rtx: 101, fec: 125, fecRTX: 107))
    #expect(media[0].recovery == [.nack, .fec])
    #expect(media[1].payloadTypes == RTPPayloadTypes(media: 109))
    // ffmpeg's (Opus on 97, no channels said: one), and Revue's own (video on 96, RTX on 97).
    let ffmpeg = try SDPMedia.parse("v=0\nm=audio 7000 RTP/AVP 97\na=rtpmap:97 opus/48000\n")
    #expect(ffmpeg.map(\.kind) == [.opus(channels: 1, stereo: nil)])
    #expect(ffmpeg.map(\.payloadTypes) == [RTPPayloadTypes(media: 97)])
    let revue = try SDPMedia.parse(
      try String(
        contentsOf: TestEnvironment.repositoryRoot.appendingPathComponent("Fuzz/Corpus/sdp/valid-vp8-opus.sdp"),
        encoding: .utf8))
    // Its ULPFEC's RTX on 123, as that SDP says (Revue's senders use 98).
    #expect(revue.map(\.payloadTypes) == [RTPPayloadTypes(media: 96, rtx: 97, fec: 122, fecRTX: 123), .revueAudio])
  }

  /// The receivers are built with the SDP's payload types: the caps name the video's and the
  /// audio's, rtprtxreceive maps the video's to its RTX and ULPFEC's to its own, rtpulpfecdec
  /// takes ULPFEC's.
  @Test(.tier(.pipeline)) func theReceiversTakeTheSDPsPayloadTypes() async throws {
    let port = FreePorts.rtp(pairs: 2)
    let sdp = """
      v=0
      m=video \(port) RTP/AVPF 100 101 125 107
      a=rtpmap:100 VP8/90000
      a=rtpmap:101 rtx/90000
      a=fmtp:101 apt=100
      a=rtpmap:125 ulpfec/90000
      a=rtpmap:107 rtx/90000
      a=fmtp:107 apt=125
      m=audio \(port + 2) RTP/AVP 109
      a=rtpmap:109 opus/48000/2
      a=fmtp:109 sprop-stereo=0
      """
    let room = Room()
    let remote = try await room.listen(sdp: sdp, on: "127.0.0.1")
    let video = try #require(remote.videoTrack).receiver.pipeline.pipeline
    let map = try #require(video.element(named: "rtx")).get("payload-type-map", as: Structure.self)
    #expect(map.get("100", as: UInt.self) == 101 && map.get("125", as: UInt.self) == 107, "\(map)")
    #expect(try video.element(named: "fec")?.get("pt", as: UInt.self) == 125)
    let videoCaps = try video.element(named: "rtpin")?.get("caps", as: Caps.self).structure(at: 0)
    #expect(videoCaps?.get("payload", as: Int.self) == 100, "\(String(describing: videoCaps))")
    let audio = try #require(remote.audioTrack).receiver.pipeline.pipeline
    let audioCaps = try audio.element(named: "rtpin")?.get("caps", as: Caps.self).structure(at: 0)
    #expect(audioCaps?.get("payload", as: Int.self) == 109, "\(String(describing: audioCaps))")
    #expect(audioCaps?.get("encoding-params", as: String.self) == "2")
    #expect(audioCaps?.get("sprop-stereo", as: String.self) == "0")
    await room.disconnect()
  }

  /// Payload types that are not numbers of 7 bits, codecs Revue does not decode, and codecs
  /// offered at another clock rate or on a static payload type are refused, naming the line.
  @Test(.tier(.pipeline)) func aPayloadTypeOrCodecRevueCannotTakeNamesItsLine() async throws {
    let port = FreePorts.rtp()
    for (sdp, words) in [
      (
        "m=video \(port) RTP/AVP 96x\na=rtpmap:96 VP8/90000",
        "SDP line 2: payload type '96x' is not a number from 0 to 127"
      ),
      ("m=audio \(port) RTP/AVP 128\na=rtpmap:128 opus/48000/2", "SDP line 2: payload type '128' is not"),
      ("m=audio \(port) RTP/AVP -1\na=rtpmap:-1 opus/48000/2", "SDP line 2: payload type '-1' is not"),
      ("m=video \(port) RTP/AVP 96\na=rtpmap:nine VP8/90000", "SDP line 3: payload type 'nine' is not"),
      ("m=video \(port) RTP/AVP 96\na=rtpmap:96 VP8", "SDP line 3: malformed rtpmap"),
      (
        "m=video \(port) RTP/AVP 96 97\na=rtpmap:96 VP8/90000\na=rtpmap:97 rtx/90000\na=fmtp:97 apt=x",
        "SDP line 5: payload type 'x' is not"
      ),
      ("m=audio \(port) RTP/AVP 0", "SDP line 2: audio in payload type 0 is not received"),
      ("m=audio \(port) RTP/AVP 97\na=rtpmap:97 PCMA/8000", "SDP line 2: audio in PCMA is not received"),
      ("m=video \(port) RTP/AVP 96\na=rtpmap:96 VP8/8000", "SDP line 3: VP8 at 8000 Hz is not received"),
      ("m=audio \(port) RTP/AVP 97\na=rtpmap:97 opus/48000/6", "SDP line 3: opus in 6 channels is not received"),
      ("m=audio \(port) RTP/AVP 8\na=rtpmap:8 opus/48000/2", "SDP line 3: opus on payload type 8 is not received"),
    ] {
      await #expect {
        try await Room().listen(sdp: "v=0\n" + sdp + "\n")
      } throws: { error in
        "\(error)".contains(words) && !"\(error)".contains("\n")
      }
    }
  }

  @Test(.tier(.pipeline)) func aMalformedOrUnsupportedSDPNamesItsLine() async {
    await #expect {
      try await Room().listen(sdp: "v=0\r\nm=video abc RTP/AVP 96\r\n")
    } throws: { error in "\(error)".contains("SDP line 2: malformed media line") }
    await #expect {
      try await Room().listen(sdp: "v=0\nm=video 5004 RTP/AVP 98\na=rtpmap:98 VP9/90000\n")
    } throws: { error in "\(error)".contains("SDP line 2: video in VP9 is not received") }
    await #expect {
      try await Room().listen(sdp: "v=0\n")
    } throws: { error in "\(error)".contains("no media line") }
  }

  /// The camera's frames are its clock (a keyframe within 60 frames), which tests running
  /// beside it would slow: it runs alone.
  @Test(.tier(.pipeline), .wholeProcess, arguments: [VideoCodec.vp8, .h264])
  func aReceiverThatJoinsLateAsksForAKeyframe(
    _ codec: VideoCodec
  ) async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let (sending, participant, capturer) = try await TestCameras.sendingRoom(
        to: port, camera: devices[0], dimensions: .h360_169)
      let local = FrameStream()
      participant.cameraTrack.add(videoRenderer: local)
      let publication = try await participant.publish(
        videoTrack: participant.cameraTrack, options: VideoPublishOptions(preferredCodec: codec))
      try await capturer.startCapture()
      // The first keyframe has gone by the time the receiver starts; the next periodic one
      // would come at frame 60.
      _ = try await local.next { _ in local.count >= 10 }
      let receiving = Room()
      let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)?codec=\(codec)")!)
      let renderer = FrameStream()
      remote.videoTrack!.add(videoRenderer: renderer)
      _ = try await renderer.next()
      #expect(local.count < 60, "the first frame came with the periodic keyframe, not one asked for")
      #expect(publication.statistics.keyframes >= 2)
      try await capturer.stopCapture()
      await sending.disconnect()
      await receiving.disconnect()
    }
  }

  /// Measures the latency and the frames dropped, which tests running beside it would raise: it
  /// runs alone.
  @Test(.tier(.interop), .wholeProcess) func listeningFromTheSendersSDPReceivesVideoAndAudio() async throws {
    let microphone = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(microphone.id) }
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let sending = Room()
      try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp())")!)
      let participant = try #require(sending.localParticipant)
      let capturer = try #require(participant.cameraTrack.capturer as? CameraCapturer)
      _ = try await capturer.set(options: CameraCaptureOptions(device: devices[0], dimensions: .h720_169))
      _ = try await participant.publish(videoTrack: participant.cameraTrack)
      let audio = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: microphone))
      _ = try await participant.publish(audioTrack: audio, options: AudioPublishOptions(dtx: false))

      let receiving = Room()
      let remote = try await receiving.listen(sdp: sending.sdp, on: "127.0.0.1")
      let identities = remote.identityUpdates
      let frames = FrameStream()
      remote.videoTrack?.add(videoRenderer: frames)
      let sound = AudioStream()
      remote.audioTrack?.add(audioRenderer: sound)
      try await capturer.startCapture()
      try await audio.capturer?.startCapture()
      _ = try await frames.next()
      let buffers = sound.buffers
      let heard: AudioPCMBuffer? = try await withDeadline(20, "a received audio buffer") {
        for await buffer in buffers { return buffer }
        return nil
      }
      #expect(heard?.sampleRate == 48_000 && heard?.channelCount == 2)
      #expect(try #require(remote.audioTrack).statistics.packetsReceived > 0)
      // Played on a sound output: ALSA's null device, which takes audio in real time.
      let speaker = try AudioPlayer(alsaDevice: "null")
      let played = speaker.playing()
      remote.audioTrack?.add(audioRenderer: speaker)
      try await withDeadline(20, "200 ms played") {
        for await frames in played where frames >= 48_000 / 5 { return }
      }
      #expect(speaker.framesPlayed >= 48_000 / 5)
      speaker.stop()
      // The sender's first RTCP report names it (its CNAME, also in the SDP).
      let identity: String? = try await withDeadline(20, "the sender's first RTCP report") {
        for await name in identities { return name }
        return nil
      }
      #expect(identity == remote.identity)
      #expect(sending.sdp.contains("cname:\(identity ?? "?")"))
      // With a sender report in, each decoded frame has a latency: sender and receiver share
      // this machine's clock, so it is exact here, and loopback drops no frame.
      let video = try #require(remote.videoTrack)
      _ = video.statistics  // the latency is the mean since the previous read
      let decoded = frames.count
      _ = try await frames.next { _ in frames.count > decoded + 5 }
      let statistics = video.statistics
      let latency = try #require(statistics.latency)
      #expect(latency > .zero && latency < .milliseconds(500), "\(latency)")
      #expect(statistics.framesDropped == 0)
      try await capturer.stopCapture()
      try await audio.capturer?.stopCapture()
      await sending.disconnect()
      await receiving.disconnect()
    }
  }
}

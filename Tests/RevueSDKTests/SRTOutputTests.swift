import Foundation
import RevueLab
import RevueProcess
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@testable import RevueSDK

/// Issue 31's SRT: a camera (and a microphone, in AAC) sent by `StreamOutput` in MPEG-TS over
/// SRT to receivers no one here wrote: ffmpeg's SRT listener, through the link emulator (5 %
/// loss each way, SRT's 120 ms latency), and ffmpeg's and GStreamer's `srtsrc` callers of an
/// output that listens, one after the other, with a passphrase.
@Suite(.tier(.interop), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct SRTOutputTests {
  init() { TestEnvironment.prepare() }

  /// ffmpeg listening for SRT on `port` (`latency` in ms), writing one line per decoded video
  /// frame (framecrc) to standard output until the caller leaves.
  static func ffmpegListener(port: Int, latency: Int = 120) throws -> ChildProcess {
    try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/ffmpeg"),
      [
        "-hide_banner", "-nostats", "-i", "srt://127.0.0.1:\(port)?mode=listener&latency=\(latency * 1000)",
        "-map", "0:v", "-f", "framecrc", "-",
      ])
  }

  /// The frames of ffmpeg's framecrc output.
  static func frames(_ framecrc: String) -> Int {
    framecrc.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains(",") }.count
  }

  /// Sends 6 s of a 640×480 camera with its microphone through the link to ffmpeg; returns the
  /// frames sent and the frames ffmpeg decoded, and what it wrote to standard error.
  static func send(through conditions: LinkConditions, seed: UInt64) async throws -> (
    sent: Int, decoded: Int, log: String, output: StreamOutput.Statistics
  ) {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let camera = try await RTSPBroadcastTests.camera(devices[0])
      let device = try await TestCameras.addMicrophone("SRT Mic")
      defer { VirtualDevices.remove(device.id) }
      let microphone = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: device))
      try await microphone.capturer?.startCapture()
      let port = FreePorts.rtp()
      let link = try LinkEmulator(
        to: "127.0.0.1", port: port, forward: conditions, backward: conditions, seed: seed)
      defer { link.stop() }
      let ffmpeg = try Self.ffmpegListener(port: port)
      let counter = FrameCounter(until: 180)
      camera.add(videoRenderer: counter)
      // The caller's handshake is repeated until ffmpeg listens behind the link.
      let output = try StreamOutput(
        track: camera, audio: microphone, to: .srt(host: "127.0.0.1", port: link.port),
        encoding: VideoEncoding(maxBitrate: 1_000_000, maxFps: 30))
      try await withDeadline(20, "180 frames captured") { await counter.waitForAll() }
      await output.stop()
      let exit = try await ffmpeg.exit(within: 20)
      try await camera.capturer?.stopCapture()
      try await microphone.capturer?.stopCapture()
      #expect(output.statistics.audioBuffersSent > 0)
      #expect(exit.error.contains("Audio: aac"), "\(exit.error.suffix(800))")
      let (forward, backward) = link.statistics
      print(
        "SRT through the link: \(forward.lost) of \(forward.packetsIn) packets lost forward,"
          + " \(backward.lost) of \(backward.packetsIn) backward")
      return (output.statistics.framesSent, Self.frames(exit.output), exit.error, output.statistics)
    }
  }

  /// Over a clean link every frame sent decodes; through 5 % loss each way (and 10 ms each way)
  /// with 120 ms of SRT latency, at least 99 % do.
  @Test(arguments: [(0.0, UInt64(1)), (0.05, UInt64(31))])
  func ffmpegDecodesTheFramesSentThroughTheLink(loss: Double, seed: UInt64) async throws {
    let conditions = LinkConditions(loss: loss, delay: .milliseconds(loss > 0 ? 10 : 0))
    let (sent, decoded, log, statistics) = try await Self.send(through: conditions, seed: seed)
    // What the link lost SRT must have sent again: ffmpeg decodes every frame the encoder made
    // (on a machine too loaded to encode all the camera gave, fewer than were sent).
    let encoded = statistics.framesEncoded
    print("SRT at \(Int(loss * 100)) % loss: ffmpeg decoded \(decoded) of \(encoded) frames encoded (\(sent) sent)")
    // The caller starts sending once ffmpeg listens behind the link: a second of the 6 may go
    // before it does.
    #expect(sent >= 120)
    #expect(statistics.reconnections == 0)
    #expect(encoded <= sent && encoded >= sent * 9 / 10, "\(encoded) of \(sent) encoded")
    #expect(
      Double(decoded) >= Double(encoded) * (loss > 0 ? 0.99 : 0.995), "\(decoded) of \(encoded): \(log.suffix(1200))")
  }

  /// An output that listens (`revue serve --srt`) serves ffmpeg, then GStreamer's `srtsrc`
  /// after ffmpeg left, both with the passphrase, the audio in Opus; a caller without it gets
  /// nothing.
  @Test func aListenerServesOneCallerAfterAnotherWithAPassphrase() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let camera = try await RTSPBroadcastTests.camera(devices[0])
      let device = try await TestCameras.addMicrophone("SRT Opus Mic")
      defer { VirtualDevices.remove(device.id) }
      let microphone = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: device))
      try await microphone.capturer?.startCapture()
      let port = FreePorts.rtp()
      let passphrase = "correct-horse-battery"
      let output = try StreamOutput(
        track: camera, audio: microphone,
        to: .srt(host: "127.0.0.1", port: port, mode: .listener, options: .init(passphrase: passphrase)),
        audioCodec: .opus)
      let ffmpeg = try ChildProcess(
        URL(fileURLWithPath: "/usr/bin/ffmpeg"),
        [
          "-hide_banner", "-nostats", "-i",
          "srt://127.0.0.1:\(port)?passphrase=\(passphrase)",
          "-map", "0:v", "-frames:v", "60", "-f", "framecrc", "-",
        ])
      let first = try await ffmpeg.exit(within: 20)
      #expect(first.status == 0, "\(first.error.suffix(800))")
      #expect(Self.frames(first.output) == 60, "\(first.error.suffix(800))")
      #expect(first.error.contains("Audio: opus"), "\(first.error.suffix(800))")
      let gstreamer = try ChildProcess(
        URL(fileURLWithPath: "/usr/bin/gst-launch-1.0"),
        [
          "-q", "srtsrc", "uri=srt://127.0.0.1:\(port)", "passphrase=\(passphrase)", "!", "tsdemux", "!",
          "h264parse", "!", "avdec_h264", "!", "identity", "eos-after=60", "!", "fakesink",
        ])
      let second = try await gstreamer.exit(within: 20)
      #expect(second.status == 0, "srtsrc: \(second.error.suffix(800))")
      let stranger = try ChildProcess(
        URL(fileURLWithPath: "/usr/bin/ffmpeg"),
        ["-hide_banner", "-nostats", "-i", "srt://127.0.0.1:\(port)", "-frames:v", "1", "-f", "null", "-"])
      let refused = try await stranger.exit(within: 20)
      #expect(refused.status != 0, "a caller without the passphrase decoded the stream")
      // Each caller is sent a keyframe as it joins: srtsrc decodes its first frame within
      // 0.4–0.5 s here, where it waited for the next of the keyframes 2 s apart before
      // (0.8–2.4 s).
      var firstFrames: [Duration] = []
      for _ in 0..<3 {
        let start = ContinuousClock.now
        let join = try ChildProcess(
          URL(fileURLWithPath: "/usr/bin/gst-launch-1.0"),
          [
            "-q", "srtsrc", "uri=srt://127.0.0.1:\(port)", "passphrase=\(passphrase)", "!", "tsdemux", "!",
            "h264parse", "!", "avdec_h264", "!", "identity", "eos-after=1", "!", "fakesink",
          ])
        let joined = try await join.exit(within: 20)
        #expect(joined.status == 0, "srtsrc: \(joined.error.suffix(800))")
        firstFrames.append(ContinuousClock.now - start)
      }
      print("SRT: a joining srtsrc decoded its first frame after \(firstFrames)")
      #expect(firstFrames.allSatisfy { $0 < .milliseconds(1500) }, "\(firstFrames)")
      #expect(output.state == .running)
      // ffmpeg and the srtsrc joined (the caller without the passphrase never did).
      #expect(output.statistics.callersJoined == 5)
      await output.stop()
      try await camera.capturer?.stopCapture()
      try await microphone.capturer?.stopCapture()
    }
  }

  /// A destination out of range is refused with what is wrong, before anything runs.
  @Test func badDestinationsAreRefused() async throws {
    let track = LocalVideoTrack.createBufferTrack()
    for (destination, words) in [
      (StreamOutput.Destination.srt(host: "127.0.0.1", port: 0), "port 0"),
      (.srt(host: "127.0.0.1", port: 9000, options: .init(latency: 5)), "latency 5 ms"),
      (.srt(host: "127.0.0.1", port: 9000, options: .init(passphrase: "short")), "passphrase has 5 bytes"),
      (.rtmp(URL(string: "rtmp://127.0.0.1/live")!), "is not rtmp://HOST/APP/KEY"),
    ] {
      #expect {
        _ = try StreamOutput(track: track, to: destination)
      } throws: { error in
        (error as? RevueError)?.kind == .invalidInput && "\(error)".contains(words)
      }
    }
    #expect {
      _ = try StreamOutput(track: track, to: .rtmp(URL(string: "rtmp://127.0.0.1/live/key")!), audioCodec: .opus)
    } throws: { ($0 as? RevueError)?.kind == .invalidInput }
    // A listener on a port another one holds cannot start: a network error, nothing left running.
    let port = FreePorts.rtp()
    let first = try StreamOutput(track: track, to: .srt(host: "127.0.0.1", port: port, mode: .listener))
    #expect {
      _ = try StreamOutput(track: track, to: .srt(host: "127.0.0.1", port: port, mode: .listener))
    } throws: { error in
      (error as? RevueError)?.kind == .network && "\(error)".contains("srt://127.0.0.1:\(port)")
    }
    await first.stop()
  }
}

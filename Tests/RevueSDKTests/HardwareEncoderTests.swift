import Foundation
import GStreamer
import RevueEncoderStandIns
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// Hardware encoders, tested with stand-ins: this machine has no VA-API, V4L2 memory-to-memory
/// or NVENC encoder, so bins around `x264enc` are registered under those names, each with the
/// real element's property names and units (Tests/RevueEncoderStandIns). What is tested is
/// Revue's side: the choice, the settings in each element's unit, the keyframe request, the
/// stream, and the fallback to software when one cannot start. Each test registers its
/// stand-in and removes it at the end, and runs alone (its cases one after another): while
/// registered, every H.264 publication of the process would prefer it.
@Suite(.serialized, .tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct HardwareEncoderTests {
  init() { TestEnvironment.prepare() }

  /// The hardware encoders the stand-ins stand in for: every one Revue drives.
  static let all = VideoEncoder.Factory.hardware

  /// Runs `body` with a stand-in registered as `factory`, failing at start when `failing`.
  static func withStandIn<T>(
    _ factory: VideoEncoder.Factory, failing: Bool = false, _ body: () async throws -> T
  ) async throws -> T {
    try #require(!Gst.hasElement(factory.rawValue), "this machine has a real \(factory.rawValue)")
    try #require(revue_standin_register(factory.rawValue, failing ? 1 : 0) == 1)
    defer { revue_standin_unregister(factory.rawValue) }
    return try await body()
  }

  /// The element that encodes a publication's first stream.
  static func encoder(of publication: LocalTrackPublication) throws -> Element {
    try #require(publication.sender?.pipeline.pipeline.element(named: "encoder"))
  }

  /// A publication of NV12 frames pushed as fast as they are taken, over RTP to a
  /// receiving room on loopback, whose renderer decodes them.
  struct Loop {
    let sending = Room()
    let receiving = Room()
    let capturer: BufferCapturer
    let publication: LocalTrackPublication
    let renderer = FrameStream()
    let pushing: Task<Void, Never>

    init(_ codec: VideoCodec = .h264, events: ((AsyncStream<Room.Event>) -> Void)? = nil) async throws {
      let port = FreePorts.rtp()
      try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
      events?(sending.events)
      let track = LocalVideoTrack.createBufferTrack(name: "frames")
      capturer = try #require(track.capturer as? BufferCapturer)
      try await capturer.startCapture()
      publication = try await sending.localParticipant!.publish(
        videoTrack: track, options: VideoPublishOptions(preferredCodec: codec))
      let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)?codec=\(codec)")!)
      remote.videoTrack!.add(videoRenderer: renderer)
      let (capturer, frame) = (capturer, BufferCapturerTests.frame(.nv12, 640, 360))
      pushing = Task {
        while !Task.isCancelled {
          capturer.capture(frame)
          await Task.yield()
        }
      }
    }

    func end() async throws {
      pushing.cancel()
      try await capturer.stopCapture()
      await sending.disconnect()
      await receiving.disconnect()
    }
  }

  /// The hardware encoder of a codec is preferred when the machine has it, and only for its
  /// codec; `REVUE_ENCODER=software` keeps the software one; what is found is what `revue
  /// check` lists.
  @Test(.wholeProcess, arguments: all) func aHardwareEncoderIsPreferredWhenPresent(_ factory: VideoEncoder.Factory)
    async throws
  {
    let (codec, other): (VideoCodec, VideoCodec) = factory.codec == .h264 ? (.h264, .vp8) : (.vp8, .h264)
    let software = VideoEncoder.Factory.software(for: codec)
    #expect(VideoEncoder.Factory.preferred(for: codec) == software)
    #expect(NodeElements.hardwareEncoders().isEmpty)
    try await Self.withStandIn(factory) {
      #expect(VideoEncoder.Factory.preferred(for: codec) == factory)
      #expect(VideoEncoder.Factory.preferred(for: codec, environment: ["REVUE_ENCODER": "software"]) == software)
      #expect(VideoEncoder.Factory.preferred(for: codec, environment: ["REVUE_ENCODER": "auto"]) == factory)
      #expect(VideoEncoder.Factory.preferred(for: other) == VideoEncoder.Factory.software(for: other))
      let found = NodeElements.hardwareEncoders()
      #expect(found.map(\.factory) == [factory.rawValue] && found[0].codec == codec && found[0].isUsed)
      #expect(found[0].zeroCopyMemory == factory.zeroCopyMemory && found[0].zeroCopyMemory != nil)
    }
    #expect(VideoEncoder.Factory.preferred(for: codec) == software)
  }

  /// The layer's bitrate and keyframe interval reach the element in its own unit when it is
  /// made, and a bitrate set later (as congestion control does) too; the stand-in takes NV12
  /// alone, and the chain asks for that.
  @Test(.wholeProcess, arguments: all) func theBitrateLandsInTheElementsUnit(_ factory: VideoEncoder.Factory)
    async throws
  {
    try await Self.withStandIn(factory) {
      let layer = VideoParameters(dimensions: .h360_169, encoding: VideoEncoding(maxBitrate: 600_000, maxFps: 30))
      let encoder = VideoEncoder(factory.codec, layer, scaled: false, factory: factory)
      #expect(encoder.rawFormats == .string("NV12"))
      let bin = try encoder.chain().bin()
      let element = try #require(bin.element(named: "encoder"))
      #expect(element.factoryName == factory.rawValue)
      /// The bitrate in the element's unit, and its keyframe interval.
      func settings() throws -> (bitrate: Int, interval: Int) {
        switch factory {
        case .v4l2h264enc:
          let controls = try #require(try element.get("extra-controls", as: Structure?.self))
          return (
            try #require(controls.get("video_bitrate", as: Int.self)),
            try #require(controls.get("h264_i_frame_period", as: Int.self))
          )
        case .vah264enc, .vavp8enc:
          return (try element.get("bitrate", as: Int.self), try element.get("key-int-max", as: Int.self))
        case .vaapih264enc:
          return (try element.get("bitrate", as: Int.self), try element.get("keyframe-period", as: Int.self))
        default: return (try element.get("bitrate", as: Int.self), try element.get("gop-size", as: Int.self))
        }
      }
      let kbits = factory != .v4l2h264enc
      #expect(try settings() == (kbits ? 600 : 600_000, 60))
      VideoEncoder.setBitrate(1_234_400, of: element)
      #expect(try settings() == (kbits ? 1234 : 1_234_400, 60))
      if factory == .nvh264enc {
        #expect(try element.get("zerolatency", as: Bool.self))
        #expect(try element.get("preset", as: Value.self) == .enumeration("low-latency-hp"))
      }
    }
  }

  /// Frames reach the element in NV12, the one format it takes, as they are or scaled to a
  /// smaller layer's size (simulcast), and its chain encodes and payloads them to the end.
  @Test(.wholeProcess, arguments: all) func theChainNegotiatesNV12AsIsAndScaled(_ factory: VideoEncoder.Factory)
    async throws
  {
    try await Self.withStandIn(factory) {
      for scaled in [false, true] {
        let layer = VideoParameters(dimensions: .h360_169, encoding: VideoEncoding(maxBitrate: 600_000, maxFps: 30))
        let pipeline = try Pipeline(
          parsing: "videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=1280,height=720,framerate=30/1"
            + " ! identity name=raw")
        let bin = try VideoEncoder(factory.codec, layer, scaled: scaled, factory: factory).chain()
          .payloading(as: "pay", payloadType: 96).bin()
        let sink = try Element.make("fakesink", name: "sink")
        try pipeline.add(bin, sink)
        try #require(pipeline.element(named: "raw")).link(bin)
        try bin.link(sink)
        try await pipeline.playUntilEndOfStream(timeout: .seconds(20))
        pipeline.stop()
      }
    }
  }

  /// An RTP publication encodes with the stand-in, the receiving room decodes its stream, and a
  /// receiver's keyframe request (RTCP PLI) reaches it as a `GstForceKeyUnit` event.
  @Test(.wholeProcess, arguments: [VideoEncoder.Factory.vah264enc, .v4l2h264enc, .vavp8enc])
  func aStreamThroughTheHardwareEncoderIsDecodedAndTakesKeyframeRequests(_ factory: VideoEncoder.Factory)
    async throws
  {
    try await Self.withStandIn(factory) {
      let loop = try await Loop(factory.codec)
      #expect(loop.publication.videoEncoder == factory.rawValue && loop.publication.encoderFallback == nil)
      let encoder = try Self.encoder(of: loop.publication)
      #expect(encoder.factoryName == factory.rawValue)
      _ = try await loop.renderer.next("3 decoded frames") { _ in loop.renderer.count >= 3 }
      // The receiver may have asked already (it joined after the first keyframe): every request
      // the publication passed on reached the encoder, and a PLI sent now adds one.
      let received = loop.publication.statistics.keyframeRequests
      PublicationTests.sendKeyframeRequest(.pli, about: loop.publication.ssrc, to: loop.publication.localRTCPPort)
      let publication = loop.publication
      _ = try await loop.renderer.next("the keyframe request at the encoder") { _ in
        let statistics = publication.statistics
        let atEncoder = (try? encoder.get("keyframe-requests", as: Int.self)) ?? 0
        return statistics.keyframeRequests > received && atEncoder >= 1
          && atEncoder == statistics.keyframeRequestsHonoured
      }
      #expect(loop.publication.state == .running)
      try await loop.end()
    }
  }

  /// A hardware encoder that cannot start gives way to x264enc: the publication runs, its
  /// stream is decoded, and the room's events say which encoder failed and which took over.
  @Test(.wholeProcess) func aHardwareEncoderThatFailsAtStartFallsBackToSoftware() async throws {
    try await Self.withStandIn(.vah264enc, failing: true) {
      let events = Mutex<AsyncStream<Room.Event>?>(nil)
      let loop = try await Loop { stream in events.withLock { $0 = stream } }
      let fallback = try #require(loop.publication.encoderFallback)
      #expect(fallback.severity == .warning)
      #expect(fallback.message.contains("vah264enc") && fallback.message.contains("x264enc"))
      #expect(fallback.message.contains("no encoding device"))  // the stand-in's error, why it failed
      #expect(loop.publication.videoEncoder == "x264enc")
      #expect(try Self.encoder(of: loop.publication).factoryName == "x264enc")
      let stream = try #require(events.withLock { $0 })
      let first = try await withDeadline(5, "the room's first event") { () -> Room.Event? in
        for await event in stream { return event }
        return nil
      }
      #expect(first == .publication(sid: loop.publication.sid, .fault(fallback)))
      _ = try await loop.renderer.next("3 decoded frames") { _ in loop.renderer.count >= 3 }
      #expect(loop.publication.state == .running)
      try await loop.end()
    }
  }
}

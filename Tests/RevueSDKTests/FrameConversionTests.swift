import Foundation
import GStreamer
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

/// Issue 29: a frame is converted at most once between the camera and the encoder. Each test
/// publishes a virtual camera over RTP and counts the `videoconvert` elements of the process's
/// pipelines that really convert (passthrough ones do not): alone in the process, so that the
/// pipelines are this test's.
@Suite(.tier(.pipeline), .serialized, .wholeProcess, .timeLimit(.minutes(1))) struct FrameConversionTests {
  init() { TestEnvironment.prepare() }

  /// One camera publishing one codec, and what it must cost.
  struct Case: Sendable, CustomTestStringConvertible {
    var profile: String
    var size: Dimensions
    var codec: VideoCodec
    /// What the camera must give (the format selection's choice).
    var cameraFormat: CaptureFormat.Encoding
    /// The conversions running, as `PIPELINE: FORMAT→FORMAT`.
    var conversions: [String]

    var testDescription: String { "\(profile) \(size.width)x\(size.height) \(cameraFormat) → \(codec)" }
  }

  static let cases = [
    // jpegdec gives I420, which the capture delivers and vp8enc takes: none.
    Case(profile: "usb-720p-webcam", size: .h720_169, codec: .vp8, cameraFormat: .jpeg, conversions: []),
    Case(profile: "usb-720p-webcam", size: .h720_169, codec: .h264, cameraFormat: .jpeg, conversions: []),
    // YUY2 to I420 in one step at the capture, none before the encoder.
    Case(
      profile: "usb-720p-webcam", size: .h480_43, codec: .vp8, cameraFormat: .raw(.yuy2),
      conversions: ["camera: YUY2→I420"]),
    // NV12 converted once to I420 for VP8, at the capture (shared by every sink); H.264 takes
    // NV12 as the camera gives it.
    Case(
      profile: "csi-camera-module", size: .h720_169, codec: .vp8, cameraFormat: .raw(.nv12),
      conversions: ["camera: NV12→I420"]),
    Case(profile: "csi-camera-module", size: .h720_169, codec: .h264, cameraFormat: .raw(.nv12), conversions: []),
  ]

  @Test(arguments: cases) func aFrameIsConvertedAtMostOnceOnItsWayToTheEncoder(_ test: Case) async throws {
    try await TestCameras.with([test.profile]) { devices in
      let (room, participant, capturer) = try await TestCameras.sendingRoom(
        to: FreePorts.rtp(), camera: devices[0], dimensions: test.size)
      let publication = try await participant.publish(
        videoTrack: participant.cameraTrack, options: VideoPublishOptions(preferredCodec: test.codec))
      let frames = FrameStream()
      participant.cameraTrack.add(videoRenderer: frames)
      try await capturer.startCapture()
      #expect(capturer.format?.encoding == test.cameraFormat)
      // Frames that came after the encoder had encoded a few: both pipelines have negotiated.
      _ = try await frames.next("frames encoded") { _ in publication.statistics.framesEncoded >= 5 }
      let running = FrameConversion.running()
      #expect(running.count <= 1, "more than one conversion: \(running)")
      #expect(Self.summary(running) == test.conversions, "\(running)")
      try await capturer.stopCapture()
      await participant.unpublish(publication: publication)
      await room.disconnect()
    }
  }

  @Test func simulcastLayersShareTheCapturesOneConversion() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let (room, participant, capturer) = try await TestCameras.sendingRoom(
        to: FreePorts.rtp(pairs: 3), camera: devices[0], dimensions: .h720_169)
      let publication = try await participant.publish(
        videoTrack: participant.cameraTrack, options: VideoPublishOptions(simulcast: true, preferredCodec: .vp8))
      let frames = FrameStream()
      participant.cameraTrack.add(videoRenderer: frames)
      try await capturer.startCapture()
      _ = try await frames.next("frames encoded") { _ in publication.statistics.framesEncoded >= 15 }
      // Three layers, each one a VP8 encoder taking I420: the capture converts once for all
      // (each layer converted the camera's NV12 itself before).
      #expect(Self.summary(FrameConversion.running()) == ["camera: NV12→I420"])
      try await capturer.stopCapture()
      await participant.unpublish(publication: publication)
      await room.disconnect()
    }
  }

  @Test func theCaptureFollowsThePublicationsThatComeAndGo() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let (room, participant, capturer) = try await TestCameras.sendingRoom(
        to: FreePorts.rtp(), camera: devices[0], dimensions: .h720_169)
      let frames = FrameStream()
      participant.cameraTrack.add(videoRenderer: frames)
      try await capturer.startCapture()
      // No sink: the camera's NV12 as it comes.
      #expect(try await frames.next().format == .nv12)
      #expect(FrameConversion.running().isEmpty)
      // VP8 joins while capturing: the capture renegotiates to I420, the sender converts nothing.
      let vp8 = try await participant.publish(
        videoTrack: participant.cameraTrack, options: VideoPublishOptions(preferredCodec: .vp8))
      try await Self.settle(frames, at: .i420, encodedBy: vp8)
      #expect(Self.summary(FrameConversion.running()) == ["camera: NV12→I420"])
      // It leaves: NV12 again, nothing converted.
      await participant.unpublish(publication: vp8)
      _ = try await frames.next("NV12 again") { $0.format == .nv12 }
      _ = try await frames.next("an NV12 frame after the change") { $0.format == .nv12 }
      #expect(FrameConversion.running().isEmpty)
      // H.264 takes NV12: the capture stays as it is.
      let h264 = try await participant.publish(
        videoTrack: participant.cameraTrack, options: VideoPublishOptions(preferredCodec: .h264))
      _ = try await frames.next("H.264 frames encoded") { _ in h264.statistics.framesEncoded >= 5 }
      #expect(try await frames.next().format == .nv12)
      #expect(FrameConversion.running().isEmpty)
      try await capturer.stopCapture()
      await participant.unpublish(publication: h264)
      await room.disconnect()
    }
  }

  /// A processor that needs NV12, and records the formats it is given.
  final class NV12Processor: VideoProcessor {
    let formats = Mutex<[PixelFormat]>([])
    var pixelFormats: Set<PixelFormat>? { [.nv12] }
    func process(pixelBuffer: PixelBuffer) -> PixelBuffer? {
      formats.withLock { $0.append(pixelBuffer.format) }
      return pixelBuffer
    }
  }

  @Test func aProcessorThatNeedsNV12GetsItWhileVP8TakesI420() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let (room, participant, capturer) = try await TestCameras.sendingRoom(
        to: FreePorts.rtp(), camera: devices[0], dimensions: .h720_169)
      let track = participant.cameraTrack
      let publication = try await participant.publish(
        videoTrack: track, options: VideoPublishOptions(preferredCodec: .vp8))
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      try await capturer.startCapture()
      _ = try await frames.next("I420 for VP8") { $0.format == .i420 && publication.statistics.framesEncoded >= 5 }
      #expect(Self.summary(FrameConversion.running()) == ["camera: NV12→I420"])
      // The processor joins while capturing: the capture gives it the camera's NV12, and the
      // sender converts for VP8 (still one conversion before the encoder).
      let processor = NV12Processor()
      track.processor = processor
      try await Self.settle(frames, at: .nv12, encodedBy: publication)
      #expect(Self.summary(FrameConversion.running()) == ["vp8-sender: NV12→I420"])
      #expect(processor.formats.withLock { $0.last } == .nv12)
      // It leaves: the capture converts for VP8 again.
      track.processor = nil
      try await Self.settle(frames, at: .i420, encodedBy: publication)
      #expect(Self.summary(FrameConversion.running()) == ["camera: NV12→I420"])
      try await capturer.stopCapture()
      await participant.unpublish(publication: publication)
      await room.disconnect()
    }
  }

  /// Waits for the capture to deliver `format`, then for `publication` to encode five frames
  /// more: the sender has taken the new format (its pipeline renegotiated) by then.
  static func settle(_ frames: FrameStream, at format: PixelFormat, encodedBy publication: LocalTrackPublication)
    async throws
  {
    _ = try await frames.next("a frame in \(format)") { $0.format == format }
    let encoded = publication.statistics.framesEncoded
    _ = try await frames.next("five frames encoded after it") { _ in
      publication.statistics.framesEncoded >= encoded + 5
    }
  }

  /// `PIPELINE: FORMAT→FORMAT` of each conversion, sorted.
  static func summary(_ conversions: [FrameConversion]) -> [String] {
    conversions.map { "\($0.pipeline): \($0.input.prefix { $0 != " " })→\($0.output.prefix { $0 != " " })" }.sorted()
  }
}

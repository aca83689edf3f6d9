import Foundation
import GStreamer
import RevueLab
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

/// Issue 13's link: a 1.5 Mb/s VP8 publication at 640×480 through a ``LinkEmulator`` capped at
/// 250 kb/s (a 100 ms bottleneck buffer, 20 ms each way), then uncapped. The sender's congestion
/// control brings its target under the cap within 5 s, the receiver decodes 25 frames a second
/// on average over the 12 s after (from the second after the one it converged in),
/// and the target is back above 1.2 Mb/s within 10 s of the cap lifting. The curve (target,
/// sent, received frames, each second) is printed for docs/congestion-control.md.
///
/// 640×480, not 720p: the test runs the scene, the encoder, the emulator and the decoder on one
/// machine, and a 720p scene with its noise costs a core on its own here. It runs alone
/// (`.wholeProcess`): it measures a frame rate and a timing, which tests beside it would slow.
@Suite(.tier(.realtime), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct CongestionControlTests {
  init() { TestEnvironment.prepare() }

  /// The cap.
  static let cap = 250_000
  /// 20 ms each way.
  static let delay = Duration.milliseconds(20)

  /// One second of the run: when, the target and why, what the sender sent and how many frames
  /// the receiver decoded.
  struct Sample: Sendable, CustomStringConvertible {
    var second: Double
    var capped: Bool
    var target: Int?
    var reason: BitrateChangeReason?
    var sent: Double
    var frames: Int

    var description: String {
      String(
        format: "%5.1f s  %@  target %5d kb/s  sent %5d kb/s  %2d fps  %@", second, capped ? "capped  " : "uncapped",
        (target ?? 0) / 1000, Int(sent / 1000), frames, reason.map { "\($0)" } ?? "-")
    }
  }

  /// The samples so far, each also sent to ``samples`` as it comes, and whether the link is
  /// capped now.
  final class Curve: Sendable {
    private let state = Mutex((all: [Sample](), capped: true))
    private let continuation: AsyncStream<Sample>.Continuation
    /// The samples from now on (one reader).
    let samples: AsyncStream<Sample>

    init() { (samples, continuation) = AsyncStream.makeStream(of: Sample.self) }

    var all: [Sample] { state.withLock { $0.all } }
    var count: Int { state.withLock { $0.all.count } }
    var capped: Bool {
      get { state.withLock { $0.capped } }
      set { state.withLock { $0.capped = newValue } }
    }
    func append(_ sample: Sample) {
      state.withLock { $0.all.append(sample) }
      continuation.yield(sample)
    }
  }

  @Test(.wholeProcess) func aStreamSixTimesTheCapConvergesKeepsItsFrameRateAndClimbsBackWhenTheCapLifts()
    async throws
  {
    let port = FreePorts.rtp()
    let receiving = Room()
    let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!, codec: .vp8)
    let renderer = FrameStream()
    remote.videoTrack!.add(videoRenderer: renderer)
    let link = try LinkEmulator(
      to: "127.0.0.1", port: port, forward: LinkConditions(delay: Self.delay, bandwidth: Self.cap),
      backward: LinkConditions(delay: Self.delay), seed: 13)
    defer { link.stop() }

    let sending = Room()
    try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(link.port)")!)
    let (track, capturer, scene) = try await MovingScene.track(width: 640, height: 480)
    defer { scene.stop() }
    let publication = try await sending.localParticipant!.publish(
      videoTrack: track,
      options: VideoPublishOptions(encoding: VideoEncoding(maxBitrate: 1_500_000, maxFps: 30), preferredCodec: .vp8))
    #expect(publication.layers.map(\.dimensions) == [Dimensions(width: 640, height: 480)])
    let reports = publication.receiverReports()
    let start = ContinuousClock.now
    let curve = Curve()
    // The curve: each second from the start, the publication's statistics and the frames decoded.
    let recorder = Task {
      var frames = renderer.count
      _ = publication.statistics
      for second in 1... {
        // waits-on-purpose: the curve is sampled each second
        guard (try? await Task.sleep(until: start + .seconds(second))) != nil else { break }
        let statistics = publication.statistics
        let count = renderer.count
        curve.append(
          Sample(
            second: Double(second), capped: curve.capped, target: statistics.targetBitrate,
            reason: statistics.targetBitrateReason, sent: statistics.bitrate, frames: count - frames))
        frames = count
      }
    }
    defer { recorder.cancel() }
    /// Waits for the receiver reports until the layer's target (the publication's statistics
    /// would restart the recorder's second) satisfies `condition`; returns the time since `from`.
    let whenTarget = {
      @Sendable (from: ContinuousClock.Instant, condition: @Sendable (Int) -> Bool) async -> Duration? in
      for await _ in reports where condition(publication.statistics(layer: 0)?.targetBitrate ?? .max) {
        return ContinuousClock.now - from
      }
      return nil
    }

    // Under the cap within 5 s.
    let converged = try await withDeadline(5, "the target under the 250 kb/s cap") {
      await whenTarget(start) { $0 < Self.cap }
    }
    // Then capped for 13 s more: at least 25 frames a second on average over the last 12 (a loss
    // burst, now and then, costs the receiver about a second of picture: docs/congestion-control.md;
    // over 7 s, one run in ten of this machine averaged 23–25 fps for one such second).
    let convergedSecond = ((converged ?? .zero) / .seconds(1)).rounded(.up)
    // The curve's stream keeps every sample: count from its start.
    var read = Int(convergedSecond) + 13
    _ = try await collect(read, of: curve.samples, within: Double(read + 5), "thirteen seconds under the cap")
    let measured = curve.all.filter { $0.second > convergedSecond + 1 }
    let fps = Double(measured.map(\.frames).reduce(0, +)) / Double(max(1, measured.count))

    // The cap lifts: back above 1.2 Mb/s within 10 s.
    link.forward = LinkConditions(delay: Self.delay)
    curve.capped = false
    let lifted = ContinuousClock.now
    let liftedSecond = Double(curve.count)
    // Under a sanitizer the encoder lags the target, and the climb with it (10.1 s once under ASan).
    let climbBound = Duration.seconds(10) * TestEnvironment.timingAllowance
    let climbed = try? await withDeadline(12 * TestEnvironment.timingAllowance, "the target above 1.2 Mb/s") {
      await whenTarget(lifted) { $0 > 1_200_000 }
    }
    // Two seconds more of the curve, at the ceiling.
    let more = curve.count - read + 2
    _ = try await collect(more, of: curve.samples, within: Double(more + 3), "the end of the curve")
    read += more
    recorder.cancel()
    let samples = curve.all

    print("congestion control, VP8 640x480, 1.5 Mb/s through 250 kb/s (100 ms buffer, 20 ms each way):")
    print(
      "converged in \(converged.map { "\($0)" } ?? "never"), \(String(format: "%.1f", fps)) fps after; the cap lifted at \(liftedSecond) s"
    )
    for sample in samples { print("  \(sample)") }
    print("back above 1.2 Mb/s \(climbed.map { "\($0)" } ?? "never") after the cap lifted")

    #expect(converged.map { $0 <= .seconds(5) } == true)
    #expect(fps >= 25 / TestEnvironment.timingAllowance, "\(samples)")
    #expect(climbed.map { $0 <= climbBound } == true, "\(samples)")
    #expect(publication.state == .running && remote.videoTrack!.state == .running)

    try await capturer.stopCapture()
    await sending.disconnect()
    await receiving.disconnect()
  }
}

/// A scene a camera might see, at 30 frames a second, pushed into a buffer capturer: a ball
/// sweeping over a still background, under faint sensor-like noise (3 % of a random picture
/// blended in). Its cost to VP8 spans the range under test, as a camera's does: about 1.35 Mb/s
/// at 1.5 Mb/s and 185 kb/s at 200 kb/s at 640×480, where the stamped frames of RevueLab
/// (made to be hard) cost VP8 265 kb/s at any target below that, more than the link carries.
final class MovingScene: Sendable {
  private let pipeline: Pipeline

  /// Starts pushing `width`×`height` I420 frames into `capturer`.
  init(into capturer: BufferCapturer, width: Int, height: Int) throws {
    let caps = "video/x-raw,format=I420,width=\(width),height=\(height),framerate=30/1"
    pipeline = try Pipeline(
      parsing: "compositor name=mix sink_1::alpha=0.03 ! \(caps) ! appsink name=sink sync=false max-buffers=2 drop=true"
        + " videotestsrc is-live=true pattern=ball motion=sweep ! \(caps) ! mix.sink_0"
        + " videotestsrc is-live=true pattern=snow ! \(caps) ! mix.sink_1")
    try pipeline.element(named: "sink", as: AppSink.self).setCallbacks(newSample: { sample in
      guard let buffer = sample.buffer,
        let frame = try? PixelBuffer(wrapping: buffer, width: width, height: height, format: .i420)
      else { return }
      capturer.capture(frame)
    })
    try pipeline.play()
  }

  /// Stops the scene.
  func stop() { pipeline.stop() }

  /// A buffer track, capturing, fed by a scene of `width`×`height`, once its first frame came
  /// (a layer takes the size of the frames the track has delivered).
  static func track(width: Int, height: Int) async throws -> (LocalVideoTrack, BufferCapturer, MovingScene) {
    let track = LocalVideoTrack.createBufferTrack(name: "scene")
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
    let scene = try MovingScene(into: capturer, width: width, height: height)
    let local = FrameStream()
    track.add(videoRenderer: local)
    do {
      _ = try await local.next("the first frame of the scene")
    } catch {
      scene.stop()
      throw error
    }
    track.remove(videoRenderer: local)
    return (track, capturer, scene)
  }
}

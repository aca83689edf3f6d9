import Foundation
import RevueSDK

/// One run of stamped frames through a bad link, judged frame by frame: the measurement behind
/// Revue's loss-recovery tests and `revue bench links`.
///
/// A buffer track publishes ``StampedFrameSource`` frames at 30 fps through a ``LinkEmulator``
/// to a receiver; the emulator's tap copies every packet the sender sent, unimpaired, to a
/// reference receiver. Both render into a ``FrameProbe``, and ``FrameJudge`` counts the frames
/// the receiver showed bit-exact as the reference decoded them, and the longest freeze.
public struct LinkTrial: Sendable, Hashable, CustomStringConvertible {
  /// The codec sent.
  public var codec: VideoCodec
  /// The picture's width.
  public var width: Int
  /// The picture's height.
  public var height: Int
  /// The link, the same both ways.
  public var link: LinkConditions
  /// How both ends recover lost packets.
  public var recovery: LossRecovery
  /// Frames pushed; the judge's window leaves out the first two seconds (start-up) and the
  /// last few (still on their way).
  public var frames: Int
  /// The emulator's seed.
  public var seed: UInt64

  /// A trial of `frames` frames of `codec` at `width`×`height`.
  public init(
    codec: VideoCodec, width: Int, height: Int, link: LinkConditions, recovery: LossRecovery, frames: Int = 300,
    seed: UInt64 = 1
  ) {
    self.codec = codec
    self.width = width
    self.height = height
    self.link = link
    self.recovery = recovery
    self.frames = frames
    self.seed = seed
  }

  /// The bitrate sent: seed 002's balanced bitrate for the size (600 kbit/s at 640×480,
  /// 1.5 Mbit/s at 720p).
  public var bitrate: Int {
    VideoEncoding.forDimensions(Dimensions(width: Int32(width), height: Int32(height))).maxBitrate
  }

  /// `vp8 640x480, 5% loss 30±10 ms, recovery nack`.
  public var description: String {
    let names = [(LossRecovery.nack, "nack"), (.fec, "fec")].filter { recovery.contains($0.0) }.map(\.1)
    return
      "\(codec.rawValue) \(width)x\(height), \(link), recovery \(names.isEmpty ? "off" : names.joined(separator: "+"))"
  }

  /// What a trial measured.
  public struct Result: Sendable, Hashable, CustomStringConvertible {
    /// The judge's verdict over the window.
    public var verdict: FrameJudge.Verdict
    /// The publication's statistics at the end.
    public var sent: LocalTrackPublication.Statistics
    /// The receiver's statistics at the end.
    public var received: RemoteVideoTrack.Statistics
    /// What the link did to the media.
    public var forward: LinkEmulator.Counters
    /// What the link did to the feedback.
    public var backward: LinkEmulator.Counters

    /// The verdict, with what was resent and asked for.
    public var description: String {
      "\(verdict); lost on the link \(forward.lost) of \(forward.packetsIn) packets, NACKs \(received.nacksSent), resent "
        + "\(sent.packetsRetransmitted.map(String.init) ?? "—"), keyframes asked \(received.keyframeRequests)"
        + " (\(sent.keyframeRequestsHonoured) made), packets given up \(received.packetsLost)"
    }
  }

  /// The first and last frames judged.
  public var window: Range<Int> { 60..<max(61, frames - 15) }

  /// Runs the trial on loopback: `port` and the three port pairs after it (receiver, reference
  /// receiver, and the emulator's own) must be free.
  /// - Throws: ``RevueError`` when a port cannot be bound or a pipeline cannot start, and
  ///   `CancellationError` when the frames do not arrive within `timeout`.
  public func run(port: Int, timeout: Duration = .seconds(60)) async throws -> Result {
    let source = try StampedFrameSource(width: width, height: height)
    _ = try source.frame(0)  // the texture, made before the clock starts
    let tested = FrameProbe(stamp: source.stamp)
    let reference = FrameProbe(stamp: source.stamp)
    let receiving = Room()
    let referenceRoom = Room()
    let sending = Room()
    var driver: StampedFrameDriver?
    var emulator: LinkEmulator?
    defer {
      driver?.stop()
      emulator?.stop()
    }
    let remote = try await receiving.listen(
      on: URL(string: "rtp://127.0.0.1:\(port)")!, codec: codec, lossRecovery: recovery)
    let referenceRemote = try await referenceRoom.listen(
      on: URL(string: "rtp://127.0.0.1:\(port + 2)")!, codec: codec, lossRecovery: recovery)
    remote.videoTrack!.add(videoRenderer: tested)
    referenceRemote.videoTrack!.add(videoRenderer: reference)
    let link = try LinkEmulator(
      listeningOn: port + 4, to: "127.0.0.1", port: port, forward: self.link, backward: self.link, seed: seed,
      tap: port + 2)
    emulator = link
    try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(link.port)")!)
    let track = LocalVideoTrack.createBufferTrack(name: "stamped")
    let capturer = track.capturer as! BufferCapturer
    try await capturer.startCapture()
    let publication = try await sending.localParticipant!.publish(
      videoTrack: track,
      options: VideoPublishOptions(
        encoding: VideoEncoding(maxBitrate: bitrate, maxFps: 30), preferredCodec: codec, lossRecovery: recovery))
    let pushing = StampedFrameDriver(pushing: source, into: capturer, fps: 30, frames: frames)
    driver = pushing
    await pushing.ended()
    // The last frames judged have arrived at the reference, and the receiver had as long
    // again as its jitter buffer waits to show them.
    let last = window.upperBound
    try await Self.within(timeout) { await reference.wait(forNumber: last) }
    try? await Self.within(.milliseconds(Room.defaultLatency * 2 + 500)) { await tested.wait(forNumber: last) }
    let result = Result(
      verdict: FrameJudge.judge(reference: reference.records, tested: tested.records, window: window),
      sent: publication.statistics, received: remote.videoTrack!.statistics, forward: link.statistics.forward,
      backward: link.statistics.backward)
    try await capturer.stopCapture()
    await sending.disconnect()
    await receiving.disconnect()
    await referenceRoom.disconnect()
    return result
  }

  /// Runs `body` until it returns or `limit` passes (then throws `CancellationError`).
  private static func within(_ limit: Duration, _ body: @escaping @Sendable () async -> Void) async throws {
    try await withThrowingTaskGroup(of: Bool.self) { group in
      group.addTask {
        await body()
        return true
      }
      group.addTask {
        try await Task.sleep(for: limit)
        return false
      }
      let finished = try await group.next()!
      group.cancelAll()
      if !finished { throw CancellationError() }
    }
  }
}

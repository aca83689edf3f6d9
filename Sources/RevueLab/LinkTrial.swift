import Foundation
import RevueSDK

/// One run of stamped frames through a bad link, judged frame by frame: the measurement behind
/// Revue's loss-recovery tests and `revue-bench links`.
///
/// A buffer track publishes ``StampedFrameSource`` frames at 30 fps through a ``LinkEmulator``
/// to a receiver; the emulator's tap copies every packet the sender sent, unimpaired, to a
/// reference receiver. Both render into a ``FrameProbe``, and ``FrameJudge`` counts the frames
/// the receiver showed bit-exact as the reference decoded them, and the longest freeze.
///
/// With an ``outage`` the link is also cut both ways for that long once frame ``outageFrame``
/// is out, and the trial measures how long after the link came back the receiver showed an
/// intact frame again (``Result/Outage``).
///
/// With ``hostile`` cases a ``HostileTraffic`` of them (their datagrams in turn) is sent straight
/// to the receiver's ports (not through the link) from the start of the judged window until the
/// last frame is pushed.
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
  /// How long the link is cut both ways (``LinkEmulator/cut(for:)``) once the reference receiver
  /// has shown frame ``outageFrame``; nil for no outage. The frames should last a few seconds
  /// past it, or the picture may not be back before the trial ends.
  public var outage: Duration?
  /// The cases of the hostile datagrams sent to the receiver during the judged window; none
  /// when empty.
  public var hostile: [HostileCase]
  /// Hostile datagrams a second (of all the cases together), with ``hostile``.
  public static let hostileRate = 500
  /// The key both ends protect the media with (SRTP and SRTCP), or nil for plain RTP.
  public var srtp: SRTPKey?

  /// The frame at which an outage starts (3 s in at 30 fps, a second into the judged window).
  public static let outageFrame = 90

  /// A trial of `frames` frames of `codec` at `width`×`height`, with an outage of `outage` and
  /// datagrams of the `hostile` cases if any, over SRTP with `srtp` if set.
  public init(
    codec: VideoCodec, width: Int, height: Int, link: LinkConditions, recovery: LossRecovery, frames: Int = 300,
    seed: UInt64 = 1, outage: Duration? = nil, hostile: [HostileCase] = [], srtp: SRTPKey? = nil
  ) {
    self.hostile = hostile
    self.codec = codec
    self.width = width
    self.height = height
    self.link = link
    self.recovery = recovery
    self.frames = frames
    self.seed = seed
    self.outage = outage
    self.srtp = srtp
  }

  /// The bitrate sent: seed 002's balanced bitrate for the size (600 kbit/s at 640×480,
  /// 1.5 Mbit/s at 720p).
  public var bitrate: Int {
    VideoEncoding.forDimensions(Dimensions(width: Int32(width), height: Int32(height))).maxBitrate
  }

  /// `vp8 640x480, loss 5%, delay 30 ms ± 10 ms, recovery nack`, and `, outage 5 s` with one.
  public var description: String {
    "\(codec.rawValue) \(width)x\(height), \(link), recovery \(Self.name(of: recovery))"
      + (outage.map { ", outage \(Self.seconds($0)) s" } ?? "")
      + (hostile.isEmpty ? "" : ", hostile \(Self.name(of: hostile))")
      + (srtp.map { ", SRTP \($0.suite.rawValue)" } ?? "")
  }

  /// `ssrcFlood`, `ssrcFlood+hostileRTCP`, or `every case` for all of them.
  public static func name(of hostile: [HostileCase]) -> String {
    hostile == HostileCase.allCases ? "every case" : hostile.map(\.rawValue).joined(separator: "+")
  }

  /// `nack`, `fec`, `nack+fec`, or `off`.
  public static func name(of recovery: LossRecovery) -> String {
    let names = [(LossRecovery.nack, "nack"), (.fec, "fec")].filter { recovery.contains($0.0) }.map(\.1)
    return names.isEmpty ? "off" : names.joined(separator: "+")
  }

  /// A duration in seconds, as short as it goes: `5`, `0.25`.
  static func seconds(_ duration: Duration) -> String {
    String(format: "%g", Double(duration / .microseconds(1)) / 1e6)
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
    /// What the outage did, in a trial with one. The ``verdict`` then leaves out
    /// ``Outage/framesLeftOut`` (``FrameJudge``'s `leavingOut`): what was not sent while the link
    /// was down is not counted as lost, and the time across the outage is not a freeze, but the
    /// wait after the link came back for the first intact frame is.
    public var outage: Outage? = nil
    /// The hostile datagrams sent to the receiver's ports, in a trial with them.
    public var hostileSent: HostileTraffic.Sent? = nil
    /// The judge's verdict over every frame from the first, start-up included, to the end of
    /// ``verdict``'s window (with the same frames left out).
    public var whole: FrameJudge.Verdict? = nil
    /// How the tested receiver's picture started.
    public var startUp: StartUp? = nil

    /// How a receiver's picture started: from the first packet the link delivered to it.
    public struct StartUp: Sendable, Hashable, CustomStringConvertible {
      /// From the first packet the link sent on to the tested receiver to the first frame the
      /// receiver showed intact; nil when it showed none, or no packet came.
      public var firstPicture: Duration?
      /// The number of that frame.
      public var firstFrame: Int?
      /// Frames the tested receiver showed intact in the second after the first packet.
      public var intactInFirstSecond: Int
      /// Frames the reference receiver showed in the second after its first.
      public var referenceInFirstSecond: Int

      /// Works out the start from both receivers' records and the first packet's arrival.
      public init(
        firstPacket: ContinuousClock.Instant?, reference: [FrameProbe.Record], tested: [FrameProbe.Record]
      ) {
        var original: [Int: UInt64] = [:]
        for record in reference where original[record.number] == nil { original[record.number] = record.hash }
        let intact = tested.filter { original[$0.number] == $0.hash }
        let first = intact.min { $0.time < $1.time }
        firstPicture = firstPacket.flatMap { packet in first.map { packet.duration(to: $0.time) } }
        firstFrame = first?.number
        intactInFirstSecond =
          firstPacket.map { packet in
            Set(intact.filter { $0.time < packet + .seconds(1) }.map(\.number)).count
          } ?? 0
        let referenceStart = reference.map(\.time).min()
        referenceInFirstSecond =
          referenceStart.map { start in
            Set(reference.filter { $0.time < start + .seconds(1) }.map(\.number)).count
          } ?? 0
      }

      /// `first picture 96 ms after the first packet (frame 0); 30 frames intact in the first
      /// second (the reference 30)`.
      public var description: String {
        let picture =
          firstPicture.map {
            "first picture \(Int(($0 / .microseconds(1) / 1000).rounded())) ms after the first packet"
              + (firstFrame.map { " (frame \($0))" } ?? "")
          } ?? "no picture"
        return "\(picture); \(intactInFirstSecond) frames intact in the first second"
          + " (the reference \(referenceInFirstSecond))"
      }
    }

    /// An outage and how the two ends came out of it.
    public struct Outage: Sendable, Hashable, CustomStringConvertible {
      /// How long the link was down.
      public var duration: Duration
      /// When the link was cut.
      public var cut: ContinuousClock.Instant
      /// When it came back (the instant ``LinkEmulator/cut(for:)`` yields).
      public var restored: ContinuousClock.Instant
      /// The frames the verdict leaves out: those the reference receiver showed from the cut, less
      /// the link's delay and jitter (their packets may still have been on the link, and were
      /// dropped), until the link came back.
      public var framesLeftOut: Range<Int>?
      /// The recovery time: from ``restored`` to the first frame the tested receiver showed at
      /// or after it that was intact (exactly the reference's pixels for its number). Nil when
      /// none came before the trial ended.
      public var recoveryTime: Duration?
      /// The number of that frame.
      public var firstFrameBack: Int?
      /// Whether the publication was still running at the end of the trial.
      public var publicationRunning: Bool
      /// Whether the tested receiver was still running at the end of the trial.
      public var receiverRunning: Bool

      /// `outage 5 s: picture back 412 ms after the link (frame 251), both ends running`.
      public var description: String {
        let back =
          recoveryTime.map { "picture back \(Int(($0 / .microseconds(1) / 1000).rounded())) ms after the link" }
          ?? "picture not back before the end"
        let ends =
          publicationRunning && receiverRunning
          ? "both ends running"
          : "publication \(publicationRunning ? "running" : "NOT running"), receiver "
            + (receiverRunning ? "running" : "NOT running")
        return
          "outage \(LinkTrial.seconds(duration)) s: \(back)\(firstFrameBack.map { " (frame \($0))" } ?? ""), \(ends)"
      }
    }

    /// The verdict, with what was resent and asked for, and the outage.
    public var description: String {
      "\(verdict); lost on the link \(forward.lost) of \(forward.packetsIn) packets, NACKs \(received.nacksSent), resent "
        + "\(sent.packetsRetransmitted.map(String.init) ?? "—"), keyframes asked \(received.keyframeRequests)"
        + " (\(sent.keyframeRequestsHonoured) made), packets given up \(received.packetsLost)"
        + (outage.map { "; \($0)" } ?? "")
        + (startUp.map { "; start: \($0)" } ?? "")
        + (whole.map { "; from the first frame: \($0.framesIntact) of \($0.framesSent) intact" } ?? "")
        + (hostileSent.map {
          "; hostile datagrams \($0): \(received.invalidPackets) not RTP, \(received.packetsFromOtherSenders) from other senders"
        } ?? "")
    }
  }

  /// The first and last frames judged.
  public var window: Range<Int> { 60..<max(61, frames - 15) }
  /// The frames judged start-up included: from the first to the end of ``window``.
  public var wholeWindow: Range<Int> { 0..<window.upperBound }

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
    let remote = try await receiving.listen(on: url(port: port), codec: codec, lossRecovery: recovery)
    let referenceRemote = try await referenceRoom.listen(on: url(port: port + 2), codec: codec, lossRecovery: recovery)
    remote.videoTrack!.add(videoRenderer: tested)
    referenceRemote.videoTrack!.add(videoRenderer: reference)
    let link = try LinkEmulator(
      listeningOn: port + 4, to: "127.0.0.1", port: port, forward: self.link, backward: self.link, seed: seed,
      tap: port + 2)
    emulator = link
    try await sending.connect(to: url(port: link.port))
    let track = LocalVideoTrack.createBufferTrack(name: "stamped")
    let capturer = track.capturer as! BufferCapturer
    try await capturer.startCapture()
    let publication = try await sending.localParticipant!.publish(
      videoTrack: track,
      options: VideoPublishOptions(
        encoding: VideoEncoding(maxBitrate: bitrate, maxFps: 30), preferredCodec: codec, lossRecovery: recovery))
    let pushing = StampedFrameDriver(pushing: source, into: capturer, fps: 30, frames: frames)
    driver = pushing
    var down: (cut: ContinuousClock.Instant, restored: ContinuousClock.Instant)?
    var attack: Task<HostileTraffic.Sent, any Error>?
    defer { attack?.cancel() }
    if !hostile.isEmpty {
      try await Self.within(timeout) { await reference.wait(forNumber: window.lowerBound) }
      var traffic = HostileTraffic(hostile, victimSSRC: publication.ssrc, payloadType: 96, seed: seed)
      attack = Task { try await traffic.send(port: port, perSecond: Self.hostileRate, for: .seconds(3600)) }
    }
    if let outage {
      try await Self.within(timeout) { await reference.wait(forNumber: Self.outageFrame) }
      let cut = ContinuousClock.now
      var restored = link.cut(for: outage).makeAsyncIterator()
      // The emulator brings the link back on a timer of its own, always.
      down = (cut, await restored.next() ?? .now)
    }
    await pushing.ended()
    attack?.cancel()
    let hostileSent = try await attack?.value
    // The last frames judged have arrived at the reference, and the receiver had as long
    // again as its jitter buffer waits to show them.
    let last = window.upperBound
    try await Self.within(timeout) { await reference.wait(forNumber: last) }
    try? await Self.within(.milliseconds(Room.defaultLatency * 2 + 500)) { await tested.wait(forNumber: last) }
    let (referenceRecords, testedRecords) = (reference.records, tested.records)
    var result = Result(
      verdict: FrameJudge.judge(reference: referenceRecords, tested: testedRecords, window: window),
      sent: publication.statistics, received: remote.videoTrack!.statistics, forward: link.statistics.forward,
      backward: link.statistics.backward)
    result.hostileSent = hostileSent
    result.startUp = Result.StartUp(
      firstPacket: link.statistics.forward.firstOut, reference: referenceRecords, tested: testedRecords)
    result.whole = FrameJudge.judge(reference: referenceRecords, tested: testedRecords, window: wholeWindow)
    if let outage, let down {
      var report = Self.outage(
        outage, cut: down.cut, restored: down.restored, onTheLink: self.link.delay + self.link.jitter,
        reference: referenceRecords, tested: testedRecords)
      report.publicationRunning = publication.state == .running
      report.receiverRunning = remote.videoTrack!.state == .running
      result.outage = report
      result.verdict = FrameJudge.judge(
        reference: referenceRecords, tested: testedRecords, window: window, leavingOut: report.framesLeftOut)
      result.whole = FrameJudge.judge(
        reference: referenceRecords, tested: testedRecords, window: wholeWindow, leavingOut: report.framesLeftOut)
    }
    try await capturer.stopCapture()
    await sending.disconnect()
    await receiving.disconnect()
    await referenceRoom.disconnect()
    return result
  }

  /// `rtp://127.0.0.1:PORT`, or `srtp://…?key=…` with the trial's key.
  private func url(port: Int) -> URL {
    guard let srtp else { return URL(string: "rtp://127.0.0.1:\(port)")! }
    var components = URLComponents(string: "srtp://127.0.0.1:\(port)")!
    components.percentEncodedQueryItems = [
      URLQueryItem(
        name: "key", value: srtp.base64.addingPercentEncoding(withAllowedCharacters: .alphanumerics)),
      URLQueryItem(name: "suite", value: srtp.suite == .aeadAES128GCM ? "aes-128-gcm" : "aes-cm-128-hmac-sha1-80"),
    ]
    return components.url!
  }

  /// What an outage from `cut` to `restored` did, from both receivers' records (the ends'
  /// states are left false for the caller). `onTheLink` is the longest a packet is on the link.
  static func outage(
    _ duration: Duration, cut: ContinuousClock.Instant, restored: ContinuousClock.Instant, onTheLink: Duration,
    reference: [FrameProbe.Record], tested: [FrameProbe.Record]
  ) -> Result.Outage {
    // The reference gets every packet at once, so it shows frames in order as they were sent.
    let from = reference.filter { $0.time >= cut - onTheLink }.map(\.number).min()
    // Up to the first frame out after the link came back (all shown, if none was).
    let to =
      reference.filter { $0.time >= restored }.map(\.number).min()
      ?? reference.map(\.number).max().map { $0 + 1 }
    var original: [Int: UInt64] = [:]
    for record in reference where original[record.number] == nil { original[record.number] = record.hash }
    let back = tested.filter { $0.time >= restored && original[$0.number] == $0.hash }.min { $0.time < $1.time }
    return Result.Outage(
      duration: duration, cut: cut, restored: restored,
      framesLeftOut: from.map { from in from..<max(from, to ?? from) },
      recoveryTime: back.map { restored.duration(to: $0.time) }, firstFrameBack: back?.number,
      publicationRunning: false, receiverRunning: false)
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

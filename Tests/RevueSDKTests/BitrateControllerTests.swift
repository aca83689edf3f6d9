import Foundation
import GStreamer
import RevueLab
import RevueTestSupport
import Testing

@testable import RevueSDK

/// The congestion controller on synthetic report sequences: hand-made reports for each rule,
/// and a simulated bottleneck (a rate cap with a 100 ms tail-drop queue) whose reports it
/// reads, every half second, as the sender's reports come.
@Suite(.sharedProcess, .timeLimit(.minutes(1))) struct BitrateControllerTests {
  /// Reports on a stream whose encoder sends exactly its target in 1000-byte packets, through
  /// a path that carries `capacity` bits per second behind a queue of `queueLimit` (tail drop),
  /// with `baseRoundTrip` when the queue is empty.
  struct SimulatedPath {
    var capacity: Double
    var queueLimit = Duration.milliseconds(100)
    var baseRoundTrip = Duration.milliseconds(40)
    /// The most the encoder sends, whatever its target (a still scene sends little).
    var contentLimit = Double.infinity
    /// The share of its target the encoder sends (VP8 sends 0.8–0.9 of it at low rates).
    var encoderShare = 1.0
    var interval = Duration.milliseconds(500)
    /// The share of packets the path loses at random, queue or not (a radio link), seeded.
    var randomLoss = 0.0
    private var random = SplitMix64(seed: 5)
    /// The packets lost at random in each interval, as the receiver asks for them again.
    private(set) var retransmissionRequests: [(time: Duration, sequence: UInt16)] = []
    private(set) var time = Duration.zero
    private var queued = 0.0
    private var sent = (bytes: 0, packets: 0)
    private var highest: UInt32 = 0
    private var lost = 0
    /// What each interval did: its end, the target, what was sent and what arrived (bits per
    /// second), and the fraction lost.
    private(set) var trace: [(time: Duration, target: Int, sent: Double, delivered: Double, lost: Double)] = []

    init(capacity: Double) { self.capacity = capacity }

    /// One interval at `controller`'s target, then its report to `controller`.
    mutating func step(_ controller: inout BitrateController) {
      let seconds = Double(interval / .milliseconds(1)) / 1000
      let offered = min(Double(controller.target) * encoderShare, contentLimit) * seconds
      let packets = max(1, Int(offered / 8000))
      let drained = capacity * seconds
      var backlog = queued + Double(packets * 8000)
      let delivered = min(backlog, drained)
      backlog -= delivered
      let room = capacity * Double(queueLimit / .milliseconds(1)) / 1000
      let dropped = max(0, backlog - room)
      queued = backlog - dropped
      var droppedPackets = Int((dropped / 8000).rounded())
      time += interval
      let deliveredPackets = max(0, packets - droppedPackets)
      for index in 0..<deliveredPackets where Double(random.next() % 1_000_000) / 1_000_000 < randomLoss {
        droppedPackets += 1
        let sequence = UInt16(truncatingIfNeeded: Int(highest) + index)
        retransmissionRequests.append((time, sequence))
        controller.retransmissionRequested(sequence, at: time - interval / 2)
      }
      sent.bytes += packets * 1000
      sent.packets += packets
      highest &+= UInt32(packets)
      lost += droppedPackets
      let roundTrip = baseRoundTrip + .milliseconds(Int64(queued / capacity * 1000))
      controller.update(
        BitrateController.Report(
          time: time, fractionLost: Double(droppedPackets) / Double(packets), packetsLost: lost,
          highestSequence: highest &- UInt32(Int(queued / 8000)), roundTrip: roundTrip, jitter: nil,
          bytesSent: sent.bytes, packetsSent: sent.packets))
      trace.append(
        (
          time, controller.target, Double(packets * 8000) / seconds, delivered / seconds,
          Double(droppedPackets) / Double(packets)
        ))
    }

    /// Steps until `seconds` of reports passed.
    mutating func run(_ controller: inout BitrateController, for seconds: Double) {
      let end = time + .milliseconds(Int64(seconds * 1000))
      while time < end { step(&controller) }
    }
  }

  /// A report at `time` seconds after `previous` (the first at 1 s): `packets` more sent of
  /// 1000 bytes, `received` of them got, `lost` lost, at `roundTrip` milliseconds.
  static func report(
    after previous: BitrateController.Report?, seconds: Double = 1, packets: Int = 100, received: Int? = nil,
    lost: Int = 0, roundTrip: Int? = 40
  ) -> BitrateController.Report {
    let got = received ?? packets - lost
    return BitrateController.Report(
      time: (previous?.time ?? .zero) + .milliseconds(Int64(seconds * 1000)),
      fractionLost: Double(lost) / Double(max(1, got + lost)), packetsLost: (previous?.packetsLost ?? 0) + lost,
      highestSequence: (previous?.highestSequence ?? 0) &+ UInt32(got + lost),
      roundTrip: roundTrip.map { .milliseconds($0) }, jitter: nil,
      bytesSent: (previous?.bytesSent ?? 0) + packets * 1000, packetsSent: (previous?.packetsSent ?? 0) + packets)
  }

  /// Two reports of a slow stream (32 packets a second) by 0.5 s, the second with a queue of
  /// 20 ms: bursts of retransmission requests are congestion from then on.
  static func queueing(_ controller: inout BitrateController) {
    _ = feed(&controller, 2) { previous in
      report(after: previous, seconds: 0.25, packets: 8, roundTrip: previous == nil ? 40 : 60)
    }
  }

  /// Feeds `reports` made one after another by `make` (given the previous one).
  static func feed(
    _ controller: inout BitrateController, _ count: Int,
    _ make: (BitrateController.Report?) -> BitrateController.Report
  ) -> BitrateController.Report? {
    var previous: BitrateController.Report?
    for _ in 0..<count {
      let report = make(previous)
      controller.update(report)
      previous = report
    }
    return previous
  }

  @Test(.tier(.unit)) func aStreamSixTimesTooFastForItsLinkConvergesBelowItWithinFiveSeconds() {
    var controller = BitrateController(ceiling: 1_500_000)
    var path = SimulatedPath(capacity: 250_000)
    path.run(&controller, for: 5)
    let converged = path.trace.firstIndex { $0.target < 250_000 }
    #expect(converged.map { path.trace[$0].time <= .seconds(5) } == true, "\(path.trace)")
    // Then it stays near the cap: it uses most of the link and loses little.
    path.run(&controller, for: 30)
    let steady = path.trace.suffix(60)
    let delivered = steady.map(\.delivered).reduce(0, +) / Double(steady.count)
    let lost = steady.map(\.lost).reduce(0, +) / Double(steady.count)
    #expect(delivered > 0.75 * 250_000, "\(steady)")
    #expect(lost < 0.02, "\(steady)")
    #expect(steady.allSatisfy { $0.target < 300_000 }, "\(steady)")
  }

  /// Issue 26: random loss is not congestion. 5 % of the packets lost at random (each asked
  /// for again) on a path with room, reported four times a second: the target stays at its
  /// ceiling. Each report over 10 % lost cut before, and bursts of requests too: 1.5 Mb/s went
  /// to 511 kb/s in 20 s through such a link.
  @Test(.tier(.unit), arguments: [0.05, 0.10]) func randomLossOnAPathWithRoomKeepsTheBitrate(_ loss: Double) {
    var controller = BitrateController(ceiling: 1_500_000)
    var path = SimulatedPath(capacity: 100_000_000)
    path.interval = .milliseconds(250)
    path.randomLoss = loss
    path.run(&controller, for: 20)
    let lowest = path.trace.map(\.target).min() ?? 0
    #expect(lowest >= 1_200_000, "lowest \(lowest): \(path.trace.filter { $0.target < 1_500_000 })")
    #expect(path.retransmissionRequests.count > 100)
  }

  /// The same random loss on a capped path: the queue shows the path is full, and the target
  /// still goes under the cap within 5 s and stays near it.
  @Test(.tier(.unit)) func aCappedPathWithRandomLossStillConverges() {
    var controller = BitrateController(ceiling: 1_500_000)
    var path = SimulatedPath(capacity: 250_000)
    path.interval = .milliseconds(250)
    path.randomLoss = 0.05
    path.run(&controller, for: 5)
    let converged = path.trace.firstIndex { $0.target < 250_000 }
    #expect(converged.map { path.trace[$0].time <= .seconds(5) } == true, "\(path.trace)")
    path.run(&controller, for: 20)
    let steady = path.trace.suffix(40)
    #expect(steady.allSatisfy { $0.target < 350_000 }, "\(steady)")
    let delivered = steady.map(\.delivered).reduce(0, +) / Double(steady.count)
    #expect(delivered > 0.6 * 250_000, "\(steady)")
  }

  @Test(.tier(.unit)) func itClimbsBackAboveOnePointTwoMegabitsWithinTenSecondsOfTheCapLifting() {
    var controller = BitrateController(ceiling: 1_500_000)
    var path = SimulatedPath(capacity: 250_000)
    path.run(&controller, for: 20)
    #expect(controller.target < 300_000)
    path.capacity = 100_000_000
    let lifted = path.time
    path.run(&controller, for: 10)
    let climbed = path.trace.first { $0.time > lifted && $0.target > 1_200_000 }
    #expect(climbed != nil, "\(path.trace.suffix(20))")
    #expect(climbed.map { $0.time - lifted <= .seconds(10) } == true)
    #expect(controller.target == 1_500_000 && controller.reason == .ceiling)
  }

  /// VP8 sends 0.8–0.9 of its target at low rates: growth held within 1.15 times what arrived
  /// barely grows; a calm path (no loss, no queue for ``BitrateController/calmWindow``) makes
  /// it fast again.
  @Test(.tier(.unit)) func aCalmPathEndsTheHeldBackGrowthOfAnEncoderThatSendsLessThanItsTarget() {
    var controller = BitrateController(ceiling: 1_500_000)
    var path = SimulatedPath(capacity: 250_000)
    path.encoderShare = 0.85
    path.interval = .milliseconds(250)
    path.run(&controller, for: 20)
    // Under the cap a calm path (this one has no keyframes) lets growth go fast now and then:
    // a queue builds, the target goes back under the cap before anything is lost.
    let capped = path.trace.filter { $0.time > .seconds(5) }
    let lost = capped.map(\.lost).reduce(0, +) / Double(capped.count)
    let delivered = capped.map(\.delivered).reduce(0, +) / Double(capped.count)
    #expect(lost < 0.02, "\(capped)")
    #expect(delivered > 0.7 * 250_000, "\(capped)")
    #expect(controller.target < 300_000, "\(capped)")
    path.capacity = 100_000_000
    let lifted = path.time
    path.run(&controller, for: 10)
    let climbed = path.trace.first { $0.time > lifted && $0.target > 1_200_000 }
    #expect(
      climbed.map { $0.time - lifted <= BitrateController.calmWindow + .seconds(5) } == true,
      "\(path.trace.suffix(40))")
  }

  /// The receiver's estimate (REMB) caps the target: down to it at once, and no increase
  /// beyond it while clean reports would raise it.
  @Test(.tier(.unit)) func theReceiversEstimateCapsTheTarget() {
    var controller = BitrateController(ceiling: 1_500_000, start: 300_000)
    #expect(controller.target == 300_000 && controller.reason == .initial)
    let changed = controller.receiverEstimated(240_000, at: .seconds(1))
    #expect(changed)
    #expect(controller.target == 240_000 && controller.reason == .receiverEstimate(240_000))
    var last = Self.report(after: nil, packets: 30)
    controller.update(last)
    for _ in 0..<10 {
      last = Self.report(after: last, packets: 30)
      controller.update(last)
    }
    #expect(controller.target == 240_000, "clean reports do not pass the receiver's estimate")
    // A higher estimate lets it climb again, to that.
    controller.receiverEstimated(2_000_000, at: last.time)
    for _ in 0..<20 {
      last = Self.report(after: last, packets: 300)
      controller.update(last)
    }
    #expect(controller.target == 1_500_000)
    #expect("\(BitrateChangeReason.receiverEstimate(240_000))" == "REMB 240 kb/s")
  }

  @Test(.tier(.unit)) func lossBetweenTwoAndTenPercentHoldsTheTarget() {
    var controller = BitrateController(ceiling: 1_000_000)
    // Down first, so that there is room to go up: 30 % lost of what was sent.
    var last = Self.feed(&controller, 2) { Self.report(after: $0, packets: 100, lost: 30) }
    let held = controller.target
    #expect(held < 1_000_000)
    for lost in [2, 5, 9, 10] {
      last = Self.feed(&controller, 3) { Self.report(after: $0 ?? last, packets: 100, lost: lost) }
      #expect(controller.target == held, "\(lost) % lost")
    }
    // Under 2 %: up.
    _ = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 100, lost: 1) }
    #expect(controller.target > held && controller.reason == .increase)
  }

  @Test(.tier(.unit)) func moreThanTenPercentLossCutsToJustBelowWhatTheReceiverGot() {
    var controller = BitrateController(ceiling: 2_000_000)
    // 200 packets of 1000 bytes a second sent (1.6 Mb/s), 50 got: 400 kb/s arrived.
    _ = Self.feed(&controller, 2) { Self.report(after: $0, packets: 200, received: 50, lost: 150) }
    #expect(controller.target == Int(400_000 * BitrateController.lossBackoff))
    #expect(controller.reason == .loss(0.75))
    #expect(controller.reason.description == "loss 75%")
  }

  @Test(.tier(.unit)) func aQueueBuildingBacksOffBeforeAnyLoss() {
    var controller = BitrateController(ceiling: 1_000_000)
    var last = Self.feed(&controller, 3) { Self.report(after: $0, packets: 100, roundTrip: 40) }
    #expect(controller.target == 1_000_000)
    // 100 packets of 1000 bytes a second got (800 kb/s), none lost, the round trip up 60 ms:
    // once is not enough (a busy machine answers late now and then), twice is a queue.
    last = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 100, roundTrip: 100) }
    #expect(controller.target == 1_000_000)
    last = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 100, roundTrip: 100) }
    #expect(controller.target == Int(800_000 * BitrateController.delayBackoff))
    #expect(controller.reason == .delay(.milliseconds(100)))
    #expect(controller.reason.description == "delay (RTT 100 ms)")
    // A little queueing (under the threshold, over the hold) holds.
    let backedOff = controller.target
    last = Self.feed(&controller, 2) { Self.report(after: $0 ?? last, packets: 90, roundTrip: 60) }
    #expect(controller.target == backedOff)
    // The queue gone: up again.
    _ = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 90, roundTrip: 42) }
    #expect(controller.target > backedOff && controller.reason == .increase)
  }

  @Test(.tier(.unit)) func aQueueWhileTheEncoderSendsLittleTakesOffAtMostAThird() {
    var controller = BitrateController(ceiling: 1_000_000)
    // A still scene: 10 packets a second (80 kb/s) against a 1 Mb/s target.
    var last = Self.feed(&controller, 3) { Self.report(after: $0, packets: 10, roundTrip: 40) }
    last = Self.feed(&controller, 2) { Self.report(after: $0 ?? last, packets: 10, roundTrip: 120) }
    #expect(controller.target == Int(1_000_000 * BitrateController.delayFloor))
    _ = last
  }

  @Test(.tier(.unit)) func theTargetStaysBetweenTheFloorAndTheCeiling() {
    var controller = BitrateController(ceiling: 500_000)
    // Clean reports at the ceiling change nothing.
    var last = Self.feed(&controller, 5) { Self.report(after: $0, packets: 60) }
    #expect(controller.target == 500_000 && controller.reason == .initial)
    // Almost nothing arrives: down to the floor, not below.
    last = Self.feed(&controller, 3) { Self.report(after: $0 ?? last, packets: 60, received: 1, lost: 59) }
    #expect(controller.target == BitrateController.minimumBitrate)
    // Clean again: up, to the ceiling and no further, said so.
    _ = Self.feed(&controller, 40) { Self.report(after: $0 ?? last, packets: 60) }
    #expect(controller.target == 500_000 && controller.reason == .ceiling)
    // A layer whose ceiling is under the usual floor has its ceiling as its floor.
    let small = BitrateController(ceiling: 20_000)
    #expect(small.floor == 20_000 && small.target == 20_000)
  }

  @Test(.tier(.unit)) func anEncoderThatSendsLittleDoesNotRaiseItsTargetFarAboveWhatArrives() {
    var controller = BitrateController(ceiling: 2_000_000)
    var last = Self.feed(&controller, 2) { Self.report(after: $0, packets: 100, received: 10, lost: 90) }
    #expect(controller.target == Int(80_000 * BitrateController.lossBackoff))
    // Clean reports, but the encoder sends 10 packets a second (80 kb/s) whatever its target.
    last = Self.feed(&controller, 20) { Self.report(after: $0 ?? last, packets: 10) }
    #expect(controller.target <= Int(80_000 * BitrateController.headroom) + 10_000)
    _ = last
  }

  @Test(.tier(.unit)) func reportsOfAStreamThatSentNothingChangeNothing() {
    var controller = BitrateController(ceiling: 1_000_000)
    // Before the first packet: even total loss is ignored.
    let silent = BitrateController.Report(
      time: .seconds(1), fractionLost: 1, packetsLost: 0, highestSequence: 0, roundTrip: nil, jitter: nil,
      bytesSent: 0, packetsSent: 0)
    let changedBySilence = controller.update(silent)
    #expect(!changedBySilence)
    #expect(controller.target == 1_000_000)
    // Sent, then quiet: a report with nothing sent since the previous one is ignored.
    let first = Self.report(after: nil, packets: 100)
    controller.update(first)
    var quiet = Self.report(after: first, packets: 0, received: 0, lost: 0)
    quiet.fractionLost = 0.5
    let changedByQuiet = controller.update(quiet)
    #expect(!changedByQuiet)
    #expect(controller.target == 1_000_000)
  }

  @Test(.tier(.unit)) func theFirstReportCutsHeavyLossByLibwebrtcsRule() {
    var controller = BitrateController(ceiling: 1_000_000)
    controller.update(Self.report(after: nil, packets: 100, lost: 50))
    #expect(controller.target == 750_000 && controller.reason == .loss(0.5))
  }

  @Test(.tier(.unit)) func theFrameRateHalvesBelowItsFloorAndComesBackWellAbove() {
    let floor = BitrateController.halvingFloor(width: 1280, height: 720, fps: 30)
    #expect(floor == 110_592)
    #expect(BitrateController.halvingFloor(width: 640, height: 480, fps: 30) == 36_864)
    var controller = BitrateController(ceiling: 1_500_000, halvingFloor: floor)
    var last = Self.feed(&controller, 1) { Self.report(after: $0, packets: 100) }
    // 18 of 100 packets got (144 kb/s): 122 kb/s, above the floor: the full frame rate.
    last = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 100, received: 18, lost: 82) }
    #expect(controller.target == 122_400 && !controller.halvesFrameRate)
    // 10 got (80 kb/s): 68 kb/s, under it: half.
    last = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 100, received: 10, lost: 90) }
    #expect(controller.target == 68_000 && controller.halvesFrameRate)
    // Clean reports (16 packets a second, 7 ms of queueing: gentle growth, not a calm path):
    // half until a quarter above the floor, so above the floor too for a while.
    var climb: [(target: Int, halved: Bool)] = []
    for _ in 0..<8 {
      last = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 16, roundTrip: 47) }
      climb.append((controller.target, controller.halvesFrameRate))
    }
    #expect(climb.last.map { Double($0.target) >= Double(floor) * 1.25 } == true, "\(climb)")
    #expect(climb.allSatisfy { $0.halved == (Double($0.target) < Double(floor) * 1.25) }, "\(climb)")
    #expect(climb.contains { $0.halved && $0.target >= floor }, "\(climb)")
    // No floor given (the default): never halved.
    var plain = BitrateController(ceiling: 1_500_000)
    _ = Self.feed(&plain, 2) { Self.report(after: $0, packets: 100, received: 10, lost: 90) }
    #expect(!plain.halvesFrameRate)
  }

  @Test(.tier(.unit)) func growthIsGentleAfterADecreaseUntilThePathIsCalm() {
    var controller = BitrateController(ceiling: 2_000_000)
    // 100 packets a second sent, 50 got (400 kb/s): cut to 340 kb/s, growth gentle.
    var last = Self.feed(&controller, 2) { Self.report(after: $0, packets: 100, received: 50, lost: 50) }
    #expect(controller.target == 340_000 && controller.gentle)
    // Clean, 45 packets a second (360 kb/s), 7 ms of queueing (not calm): up a fifth a
    // second, at most 15 % above what came.
    last = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 45, roundTrip: 47) }
    #expect(controller.target == Int(340_000 * (1 + BitrateController.gentleIncreasePerSecond)))
    #expect(controller.target <= Int(360_000 * BitrateController.gentleHeadroom))
    // Twice as much arrives, still with a little queue: still gentle (a report's rate is noisy).
    last = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 90, roundTrip: 47) }
    #expect(controller.gentle && controller.target == Int((408_000 * 1.2).rounded()))
    // Calm reports (no loss, the least round trip): gentle until 2.5 s of them, then fast.
    var steps: [(gentle: Bool, target: Int)] = []
    for _ in 0..<4 {
      last = Self.feed(&controller, 1) { Self.report(after: $0 ?? last, packets: 90) }
      steps.append((controller.gentle, controller.target))
    }
    #expect(steps.map(\.gentle) == [true, true, false, false], "\(steps)")
    // Faster than gentle growth allows (up to twice what arrived).
    #expect(steps[3].target == 2 * 720_000 + 10_000, "\(steps)")
    _ = last
  }

  /// With no queue at the latest report, a burst of requests is the path's own loss (a lost
  /// keyframe is several packets): nothing changes.
  @Test(.tier(.unit)) func aBurstWithNoQueueIsNotCongestion() {
    var controller = BitrateController(ceiling: 1_000_000)
    _ = Self.feed(&controller, 2) { Self.report(after: $0, seconds: 0.25, packets: 8) }
    for packet in 0..<10 { controller.retransmissionRequested(UInt16(packet), at: .milliseconds(1_000)) }
    #expect(controller.target == 1_000_000 && controller.reason == .initial)
  }

  @Test(.tier(.unit)) func aBurstOfRetransmissionRequestsCutsAtOnceButNotTwiceInASecond() {
    var controller = BitrateController(ceiling: 1_000_000)
    Self.queueing(&controller)
    /// Requests for `packets` at `times` (milliseconds); whether the last one changed the target.
    func request(_ packets: [Int], at times: [Int]) -> [Bool] {
      zip(packets, times).map { controller.retransmissionRequested(UInt16($0), at: .milliseconds(Int64($1))) }
    }
    // Requests spread out are not a burst; four in a quarter of a second are not either.
    #expect(request([0, 1, 2, 3, 4], at: [1_000, 1_400, 1_420, 1_440, 1_460]) == [false, false, false, false, false])
    #expect(controller.target == 1_000_000)
    // A fifth within 250 ms of four others: a fifth off, at once.
    #expect(request([5], at: [1_500]) == [true])
    #expect(controller.target == 800_000 && controller.reason == .retransmissionRequests(5))
    #expect(controller.reason.description == "5 NACKs")
    // Another burst within the second after: nothing more.
    _ = request([10, 11, 12, 13, 14], at: [1_600, 1_610, 1_620, 1_630, 1_640])
    #expect(controller.target == 800_000)
    // A second later, three copies of one request each for four packets: not a burst.
    _ = request([20, 20, 20, 21, 21, 21, 22, 22, 22, 23, 23, 23], at: Array(2_600..<2_612))
    #expect(controller.target == 800_000)
    // A fifth packet: a burst.
    _ = request([24], at: [2_700])
    #expect(controller.target == 640_000)
  }

  /// A NACK flood (anyone who reaches the sender's port, or a broken receiver) costs little per
  /// request: copies of four packets in one quarter second, then every packet number within the
  /// hold after a burst. Each request scanned every request of the window before: 200,000 of
  /// them took minutes.
  @Test(.tier(.unit)) func aFloodOfRetransmissionRequestsCostsLittleEach() async throws {
    let target = try await onThread(within: 10, "200,000 requests") {
      var controller = BitrateController(ceiling: 1_000_000)
      Self.queueing(&controller)
      for index in 0..<100_000 {
        controller.retransmissionRequested(UInt16(index % 4), at: .milliseconds(1_000 + Int64(index / 1_000)))
      }
      controller.retransmissionRequested(4, at: .milliseconds(1_100))
      for index in 0..<100_000 {
        controller.retransmissionRequested(UInt16(truncatingIfNeeded: index), at: .milliseconds(1_200))
      }
      return controller.target
    }
    // Four packets are no burst; the fifth is, and nothing more within the hold.
    #expect(target == 800_000)
  }

  @Test(.tier(.unit)) func onAFastStreamABurstIsAShareOfWhatWasSentNotThreePackets() {
    var controller = BitrateController(ceiling: 4_000_000)
    // 400 packets a second: 100 in a quarter second, of which 25 make a burst.
    let last = Self.feed(&controller, 3) { Self.report(after: $0, packets: 400) }
    // A queue shows at the last report.
    controller.update(Self.report(after: last, packets: 400, roundTrip: 60))
    #expect(controller.packetRate == 400)
    // Random loss asks for a few.
    for packet in 0..<10 { controller.retransmissionRequested(UInt16(packet), at: .seconds(4)) }
    #expect(controller.target == 4_000_000)
    // An overflowing queue, many.
    for packet in 10..<25 { controller.retransmissionRequested(UInt16(packet), at: .seconds(4)) }
    #expect(controller.target == 3_200_000 && controller.reason == .retransmissionRequests(25))
  }

  @Test(.tier(.unit)) func theEncoderIsAskedForLessWhenTheStreamSendsMoreThanItAsked() {
    var controller = BitrateController(ceiling: 2_000_000)
    // Down to 1 Mb/s first (1000 of 2000 packets got).
    var last = Self.feed(&controller, 2) { Self.report(after: $0, packets: 250, received: 125, lost: 125) }
    #expect(controller.target == 850_000)
    // The stream sends a fifth more than its encoder is asked for (retransmissions, headers,
    // overshoot), and the reports hold (5 % lost): the encoder is asked for less, so that the
    // stream sends its target.
    for _ in 0..<15 {
      let packets = Int((1.2 * Double(controller.encoderBitrate) / 8000).rounded())
      last = Self.report(after: last, packets: packets, lost: packets / 20)
      controller.update(last!)
    }
    #expect(controller.target == 850_000)
    #expect(abs(controller.overshoot - 1.2) < 0.02, "\(controller.overshoot)")
    #expect(abs(controller.encoderBitrate - 708_333) < 15_000, "\(controller.encoderBitrate)")
    // Far more than asked is taken as at most 1.4 times; at the ceiling, the encoder keeps it.
    var wild = BitrateController(ceiling: 100_000)
    _ = Self.feed(&wild, 20) { Self.report(after: $0, packets: 100) }
    #expect(wild.overshoot <= BitrateController.largestOvershoot)
    #expect(wild.target == 100_000 && wild.encoderBitrate == 100_000)
  }

  @Test(.tier(.unit)) func theSameReportsGiveTheSameTargets() {
    let run = { () -> [Int] in
      var controller = BitrateController(ceiling: 1_500_000)
      var path = SimulatedPath(capacity: 300_000)
      path.run(&controller, for: 20)
      return path.trace.map(\.target)
    }
    #expect(run() == run())
  }

  // MARK: - Glue: the encoder, the frames and the statistics

  @Test(.tier(.unit)) func theTargetIsSetOnEachEncoderInItsUnit() throws {
    // vp8enc keeps whole kbit/s (libvpx's unit) and x264enc takes them; openh264enc takes bit/s.
    for (factory, property, unit, expected) in [
      ("vp8enc", "target-bitrate", 1, 212_000), ("x264enc", "bitrate", 1000, 212_000),
      ("openh264enc", "bitrate", 1, 212_400),
    ] where Gst.hasElement(factory) {
      let encoder = try Element.make(factory)
      VideoEncoder.setBitrate(212_400, of: encoder)
      #expect(try encoder.get(property, as: Int.self) * unit == expected, "\(factory)")
    }
  }

  @Test(.tier(.unit)) func retransmissionsStayWithinHalfTheTarget() {
    // 480 kb/s: 240 kb/s for retransmissions, 25 packets of 1200 bytes a second, 12 at once.
    let budget = RetransmissionBudget(target: 480_000)
    let start = ContinuousClock.now
    let burst = (0..<20).map { budget.allows(UInt16($0), at: start) }
    #expect(burst.filter { $0 }.count == 12 && budget.refused == 8)
    // A second later, a second's worth again, up to what the bucket holds.
    let later = (20..<40).map { budget.allows(UInt16($0), at: start + .seconds(1)) }
    #expect(later.filter { $0 }.count == 12)
    // A lower target, a smaller budget.
    budget.setTarget(48_000)
    let low = (40..<45).map { budget.allows(UInt16($0), at: start + .seconds(3)) }
    #expect(low.filter { $0 }.count == 1)
  }

  @Test(.tier(.unit)) func copiesOfARequestAreAnsweredOnlyWhileTheBudgetIsAmple() {
    // 480 kb/s: buckets of 12 packets. Full, a first request and its three copies are answered,
    // and the copies leave the first requests' bucket alone.
    let budget = RetransmissionBudget(target: 480_000)
    let start = ContinuousClock.now
    #expect((0..<4).allSatisfy { _ in budget.allows(7, at: start) })
    // Copies of five more requests: the copies' bucket runs out (9 left, 15 asked) and first
    // requests are still answered.
    let copies = (100..<105).flatMap { packet in
      [budget.allows(UInt16(packet), at: start)] + (0..<3).map { _ in budget.allows(UInt16(packet), at: start) }
    }
    #expect(copies.filter { $0 }.count == 5 + 9)
    // After the copy window, a request for the same packet is a first one again.
    #expect(budget.allows(100, at: start + .seconds(1)))

    // Drained below half by first requests (7 of 12 taken: 5 left), copies are refused though
    // their own bucket is full (the path is congested), and first requests still answered.
    let congested = RetransmissionBudget(target: 480_000)
    #expect((0..<7).allSatisfy { congested.allows(UInt16($0), at: start) })
    #expect(!congested.allows(0, at: start))
    #expect(congested.allows(7, at: start))
  }

  @Test(.tier(.pipeline)) func aHalvedFrameRateDropsEveryOtherFrameBeforeTheEncoderAndTheTargetReachesIt() async throws
  {
    let pipeline = try Pipeline(
      parsing: "videotestsrc num-buffers=40 ! video/x-raw,width=160,height=120,framerate=30/1"
        + " ! vp8enc name=encoder deadline=1 target-bitrate=1500000 ! fakesink")
    let encoder = try #require(pipeline.element(named: "encoder"))
    let encoded = Locked(0)
    encoder.staticPad("src")?.addProbe(.buffer) { _, _ in
      encoded.value.withLock { $0 += 1 }
      return .ok
    }
    let adaptation = BitrateAdaptation(
      ceiling: 1_500_000, halvingFloor: BitrateController.halvingFloor(width: 1280, height: 720, fps: 30))
    adaptation.attach(to: encoder)
    var last = Self.report(after: nil, packets: 100)
    adaptation.take(last)
    last = Self.report(after: last, packets: 100, received: 10, lost: 90)
    adaptation.take(last)
    #expect(adaptation.state.target == 68_000 && adaptation.state.halvesFrameRate)
    #expect(try encoder.get("target-bitrate", as: Int.self) == 68_000)
    try await pipeline.playUntilEndOfStream(timeout: .seconds(30))
    #expect(encoded.value.withLock { $0 } == 20)
  }

  @Test(.tier(.unit)) func publicationStatisticsShowTheTargetOnlyWhenItAdapts() async throws {
    let room = Room()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 6))")!)
    let participant = try #require(room.localParticipant)
    let encoding = VideoEncoding(maxBitrate: 1_200_000, maxFps: 30)
    let adaptive = try await participant.publish(
      videoTrack: LocalVideoTrack.createBufferTrack(), options: VideoPublishOptions(encoding: encoding))
    #expect(adaptive.statistics.targetBitrate == 1_200_000)
    #expect(adaptive.statistics.targetBitrateReason == .initial && !adaptive.statistics.frameRateHalved)
    let fixed = try await participant.publish(
      videoTrack: LocalVideoTrack.createBufferTrack(),
      options: VideoPublishOptions(encoding: encoding, adaptiveBitrate: false))
    #expect(fixed.statistics.targetBitrate == nil && fixed.statistics.targetBitrateReason == nil)
    #expect(fixed.sender!.streams.allSatisfy { $0.adaptation == nil })
    let audio = try await participant.publish(audioTrack: LocalAudioTrack.createBufferTrack())
    #expect(audio.statistics.targetBitrate == nil && audio.statistics.targetBitrateReason == nil)
    await room.disconnect()
  }

  @Test(.tier(.unit)) func eachSimulcastLayerHasItsOwnTargetAndThePublicationTheirSum() async throws {
    let room = Room()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 3))")!)
    let participant = try #require(room.localParticipant)
    let track = LocalVideoTrack.createBufferTrack()
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
    capturer.capture(BufferCapturerTests.frame(.i420, 1280, 720))
    let publication = try await participant.publish(videoTrack: track, options: VideoPublishOptions(simulcast: true))
    let ceilings = publication.layers.map(\.encoding.maxBitrate)
    #expect(ceilings.count == 3)
    #expect((0..<3).map { publication.statistics(layer: $0)?.targetBitrate } == ceilings)
    #expect(publication.statistics.targetBitrate == ceilings.reduce(0, +))
    try await capturer.stopCapture()
    await room.disconnect()
  }
}

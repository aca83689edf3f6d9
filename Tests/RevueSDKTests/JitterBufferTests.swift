import GStreamer
import GStreamerCheck
import RevueLab
import RevueTestSupport
import Testing

@testable import RevueSDK

/// The receiver's jitter buffer (``RTPReceiver/jitterBuffer(latency:nack:)``, the element its
/// pipeline runs) alone in a harness on a test clock: when a missing packet is asked for, asked
/// for again, given up, and passed on. Milliseconds each, where the same timing over a real link
/// (``LossRecoveryTests``) takes seconds of packets and can only be read from its effects.
@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(1))) struct JitterBufferTests {
  init() { TestEnvironment.prepare() }

  /// 30 packets a second, one a frame, as a small video stream sends them.
  static let interval = Duration.milliseconds(33)
  /// What the receiver waits for a missing packet: `revue receive`'s default.
  static let latency = Room.defaultLatency

  /// A harness around the receiver's jitter buffer, on a test clock, VP8 caps set.
  static func harness(nack: Bool = true) throws -> Harness {
    let harness = Harness(try RTPReceiver.jitterBuffer(latency: latency, nack: nack).make())
    harness.useTestClock()
    harness.setSourceCaps(
      try Caps(
        "application/x-rtp, media=(string)video, clock-rate=(int)90000, encoding-name=(string)VP8, payload=(int)96"))
    return harness
  }

  /// A VP8 packet (one frame's keyframe start) numbered `sequence`, its timestamp a frame's
  /// worth per number.
  static func packet(_ sequence: UInt16) -> Buffer {
    Buffer(
      copying: [0x80, 96] + bigEndianBytes(sequence) + bigEndianBytes(UInt32(sequence) * 2970)
        + bigEndianBytes(UInt32(0x1234_5678)) + [0x10, 0, 0x9d, 0x01, 0x2a])
  }

  /// When packet `sequence` is due: `sequence` intervals from 0.
  static func due(_ sequence: UInt16) -> Duration { interval * Int(sequence) }

  /// A retransmission request the jitter buffer sent upstream, as it says it: the packet, when
  /// it was due, how long after that this request went, which retry it is, and how long it
  /// waits before the next.
  struct Request: Equatable, CustomStringConvertible {
    var sequence: UInt
    var due: Duration
    var delay: Duration
    var retry: UInt
    var retryTimeout: Duration
    var description: String { "\(sequence) due \(due) +\(delay) retry \(retry) every \(retryTimeout)" }

    init?(_ event: Event) {
      guard let request = event.structure, request.name == "GstRTPRetransmissionRequest",
        let sequence = request.get("seqnum", as: UInt.self), let due = request.get("running-time", as: UInt64.self),
        let delay = request.get("delay", as: UInt.self), let retry = request.get("retry", as: UInt.self),
        let frequency = request.get("frequency", as: UInt.self)
      else { return nil }
      (self.sequence, self.due, self.retry) = (sequence, ClockTime(nanoseconds: due).duration, retry)
      (self.delay, retryTimeout) = (.milliseconds(delay), .milliseconds(frequency))
    }
  }

  /// Drives `harness` through `arrivals` (a packet's sequence number and the time it comes),
  /// then on to `end`: before each arrival the timers due by then fire. Returns the
  /// retransmission requests, in order.
  static func run(_ harness: Harness, _ arrivals: [(sequence: UInt16, time: Duration)], until end: Duration) throws
    -> [Request]
  {
    var requests: [Request] = []
    func fireTimers(until time: Duration) {
      // The jitter buffer's timer thread waits on the clock whenever it has a timer.
      while harness.waitForClockWaits(1, timeout: .milliseconds(20)), let next = harness.nextClockWait,
        next.duration <= time
      {
        harness.crankClockWait()
        // Once it waits again, it has sent what that timer sent.
        _ = harness.waitForClockWaits(1, timeout: .milliseconds(20))
        requests += harness.pullAllUpstreamEvents().compactMap(Request.init)
      }
    }
    for (sequence, time) in arrivals {
      fireTimers(until: time)
      #expect(harness.setTime(ClockTime(time)), "packets come in time order")
      var packet = packet(sequence)
      packet.dts = ClockTime(time)
      try harness.push(packet)
    }
    fireTimers(until: end)
    return requests + harness.pullAllUpstreamEvents().compactMap(Request.init)
  }

  /// The sequence numbers of the next `count` packets out of `harness`, waiting for each.
  static func passed(_ count: Int, from harness: Harness) throws -> [UInt16] {
    try (0..<count).map { _ in
      let packet = try #require(harness.pull())
      return try packet.withUnsafeBytes { UInt16($0[2]) << 8 | UInt16($0[3]) }
    }
  }

  /// The packets the jitter buffer said it lost (`GstRTPPacketLost`), by sequence number.
  static func lost(_ harness: Harness) -> [UInt] {
    harness.pullAllEvents().compactMap { event in
      event.structure.flatMap { $0.name == "GstRTPPacketLost" ? $0.get("seqnum", as: UInt.self) : nil }
    }
  }

  /// A stream of 0…14 with packet 3 missing.
  static let withoutThree = (0..<15).filter { $0 != 3 }.map { (UInt16($0), due(UInt16($0))) }

  /// Packet 3 of 0…14 is missing: it is asked for ``RTPReceiver/nackDelayMilliseconds`` or
  /// more after it was due (a packet a little late is not lost), again every
  /// ``RTPReceiver/nackRetryMilliseconds`` (no sooner than a round trip could answer) while the
  /// ``latency`` lasts, and then given up (a `GstRTPPacketLost` event): the packets after it,
  /// held back meanwhile, are passed on in order.
  @Test func aMissingPacketIsAskedForLateEnoughAndAgainUntilItIsGivenUp() throws {
    let harness = try Self.harness()
    let requests = try Self.run(harness, Self.withoutThree, until: Self.due(14))
    #expect(requests.allSatisfy { $0.sequence == 3 && $0.due == Self.due(3) }, "\(requests)")
    #expect(requests.map(\.retry) == Array(0..<UInt(requests.count)), "\(requests)")
    #expect(requests.count >= 2, "asked for again: \(requests)")
    let first = try #require(requests.first)
    #expect(first.delay >= .milliseconds(RTPReceiver.nackDelayMilliseconds), "\(requests)")
    #expect(first.retryTimeout == .milliseconds(RTPReceiver.nackRetryMilliseconds), "\(requests)")
    let lastRetry = first.delay + first.retryTimeout * (requests.count - 1)
    #expect(lastRetry < .milliseconds(Self.latency), "every request within the latency: \(requests)")
    #expect(try Self.passed(14, from: harness) == [0, 1, 2] + Array(4..<15))
    #expect(Self.lost(harness) == [3])
  }

  /// The retransmission of packet 3 arrives after the first request: it takes its place in
  /// order, no more requests go for it, and nothing is given up.
  @Test func aRetransmissionInTimeFillsTheGap() throws {
    let harness = try Self.harness()
    let first = try Self.run(harness, Array(Self.withoutThree.prefix(5)), until: Self.due(5))
    #expect(first.map(\.sequence) == [3])
    let rest = [(UInt16(3), Self.due(5) + .milliseconds(5))] + Self.withoutThree.dropFirst(5)
    let later = try Self.run(harness, rest, until: Self.due(14))
    #expect(!later.contains { $0.sequence == 3 }, "\(later)")
    #expect(try Self.passed(15, from: harness) == Array(0..<15))
    #expect(Self.lost(harness).isEmpty)
  }

  /// Without NACK (a sender that offers no retransmission) nothing is asked for; the gap is
  /// given up all the same.
  @Test func withoutNACKNothingIsAskedFor() throws {
    let harness = try Self.harness(nack: false)
    #expect(try Self.run(harness, Self.withoutThree, until: Self.due(14)).isEmpty)
    #expect(try Self.passed(14, from: harness) == [0, 1, 2] + Array(4..<15))
    #expect(Self.lost(harness) == [3])
  }
}

import GStreamer
import Synchronization

/// The congestion control of one video stream of a sender: each receiver report on the stream
/// goes to its ``BitrateController``, whose target is set on the stream's encoder as it
/// changes, and whose halved frame rate drops every other frame before the encoder.
/// Retransmissions (RTX) are kept within a share of the target (``RetransmissionBudget``).
///
/// Made by the publication (one per stream, when ``VideoPublishOptions/adaptiveBitrate`` is
/// on) and handed to ``RTPSender/Stream``; the sender attaches the encoder and reports each
/// receiver report (on the thread that receives RTCP).
final class BitrateAdaptation: Sendable {
  private let controller: Mutex<BitrateController>
  private let encoder = Mutex<Element?>(nil)
  /// The stream's RTX sender, whose retransmissions the reports' sequence numbers do not count.
  private let retransmitter = Mutex<Element?>(nil)
  /// The stream's pacer, whose rate follows the target (``Pacer/factor`` times it).
  private let pacer = Mutex<Pacer?>(nil)
  /// Shared with the probe on the encoder's input (which must not hold the encoder).
  private let frames = FrameHalving()
  /// Shared with the probe on the RTX sender's output.
  private let retransmissions: RetransmissionBudget
  /// Where the reports' times count from.
  private let origin = ContinuousClock.now

  /// A stream of at most `ceiling` bits per second, which starts there (or at `start`); below
  /// `halvingFloor` (nil: never) every other frame is dropped; its retransmissions are kept
  /// within a budget of `retransmissionPolicy`.
  init(
    ceiling: Int, halvingFloor: Int?, start: Int? = nil,
    retransmissionPolicy: RetransmissionBudget.Policy = .rtp
  ) {
    let controller = BitrateController(ceiling: ceiling, halvingFloor: halvingFloor, start: start)
    self.controller = Mutex(controller)
    retransmissions = RetransmissionBudget(target: controller.target, policy: retransmissionPolicy)
  }

  /// The target now and why it last changed.
  var state: (target: Int, reason: BitrateChangeReason, halvesFrameRate: Bool) {
    controller.withLock { ($0.target, $0.reason, $0.halvesFrameRate) }
  }

  /// Makes `encoder` the one whose bitrate follows the target, and drops every other frame at
  /// its input while the frame rate is halved. The RTX sender beside it in its bin, if any, is
  /// attached too (``attach(retransmitter:)``).
  func attach(to encoder: Element?) {
    guard let encoder else { return }
    self.encoder.withLock { $0 = encoder }
    let (target, encoderBitrate) = controller.withLock { ($0.target, $0.encoderBitrate) }
    if target < controller.withLock({ $0.ceiling }) { VideoEncoder.setBitrate(encoderBitrate, of: encoder) }
    let frames = frames
    encoder.staticPad("sink")?.addProbe(.buffer) { _, _ in frames.passes() ? .ok : .drop }
    attach(retransmitter: (encoder.parent as? Bin)?.elements.first { $0.factoryName == "rtprtxsend" })
  }

  /// Makes `retransmitter` (an `rtprtxsend`) the stream's: its retransmissions are read at each
  /// report, and the requests beyond the budget are dropped before it. ``attach(to:)`` finds it
  /// beside the encoder; one elsewhere (inside `webrtcbin`) is given here.
  func attach(retransmitter: Element?) {
    self.retransmitter.withLock { $0 = retransmitter }
    let retransmissions = retransmissions
    retransmitter?.staticPad("src")?.addProbe(.eventUpstream) { [weak self] _, info in
      guard let request = info.event?.structure, request.name == "GstRTPRetransmissionRequest" else { return .ok }
      if let sequence = request.get("seqnum", as: UInt.self).flatMap(UInt16.init(exactly:)) {
        self?.retransmissionRequested(sequence)
      }
      let sequence = request.get("seqnum", as: UInt.self).flatMap(UInt16.init(exactly:))
      return retransmissions.allows(sequence, at: .now) ? .ok : .drop
    }
  }

  /// Makes `pacer` the stream's: its rate follows the target from now on.
  func attach(pacer: Pacer) {
    let target = controller.withLock { $0.target }
    pacer.setRate(Int(Double(target) * Pacer.factor))
    self.pacer.withLock { $0 = pacer }
  }

  /// Retransmission requests dropped so far, over the budget.
  var retransmissionsRefused: Int { retransmissions.refused }

  /// Takes in a receiver report on the stream, the round-trip time it gave (nil when it gave
  /// none) and the stream's counters then; sets the encoder's bitrate when the target changed.
  func reported(_ block: RTCPReportBlock, roundTrip: Duration?, sent counters: RTPSender.Counters) {
    let retransmitted = retransmitter.withLock { $0 }.flatMap { try? $0.get("num-rtx-packets", as: UInt.self) }
    take(
      BitrateController.Report(
        time: ContinuousClock.now - origin, fractionLost: block.fractionLost, packetsLost: Int(block.packetsLost),
        highestSequence: block.highestSequence, roundTrip: roundTrip,
        jitter: .microseconds(Int64(block.jitter) * 1_000_000 / 90_000), bytesSent: counters.bytesSent,
        packetsSent: counters.packetsSent, packetsRetransmitted: retransmitted.map { Int($0) } ?? 0))
  }

  /// Takes in a retransmission request for packet `sequence` that came now.
  func retransmissionRequested(_ sequence: UInt16) {
    let now = ContinuousClock.now - origin
    update { $0.retransmissionRequested(sequence, at: now) }
  }

  /// Takes in the receiver's estimate of what the path carries (RTCP REMB), which caps the
  /// target; sets the encoder's bitrate when the target changed.
  func receiverEstimated(_ bitsPerSecond: Int) {
    let now = ContinuousClock.now - origin
    update { $0.receiverEstimated(bitsPerSecond, at: now) }
  }

  /// Takes in a report; sets the encoder's bitrate when the target changed.
  func take(_ report: BitrateController.Report) { update { $0.update(report) } }

  /// Changes the controller with `change`, which says whether the encoder's bitrate or the
  /// frame rate changed; applies its new state if so.
  private func update(_ change: (inout BitrateController) -> Bool) {
    let (changed, state) = controller.withLock { controller in
      (
        change(&controller),
        (controller.target, controller.reason, controller.halvesFrameRate, controller.encoderBitrate)
      )
    }
    if changed { apply(state) }
  }

  /// Makes the controller's new state so: frames, retransmission budget and encoder.
  private func apply(_ state: (Int, BitrateChangeReason, Bool, Int)) {
    frames.halved.store(state.2, ordering: .relaxed)
    retransmissions.setTarget(state.0)
    pacer.withLock { $0 }?.setRate(Int(Double(state.0) * Pacer.factor))
    guard let encoder = encoder.withLock({ $0 }) else { return }
    VideoEncoder.setBitrate(state.3, of: encoder)
    RevueLog.log(
      .debug, "Publication",
      "\(encoder.factoryName ?? "encoder") target \(state.0 / 1000) kb/s (\(state.1)), encoder \(state.3 / 1000) kb/s"
        + (state.2 ? ", half the frame rate" : ""))
  }
}

/// Whether the frame rate is halved, and which frames pass meanwhile: every other one.
private final class FrameHalving: Sendable {
  let halved = Atomic(false)
  private let count = Atomic(0)

  /// Whether the next frame goes to the encoder.
  func passes() -> Bool {
    guard halved.load(ordering: .relaxed) else { return true }
    return count.wrappingAdd(1, ordering: .relaxed).oldValue % 2 == 0
  }
}

/// The retransmissions a stream may send: two token buckets, each filled at ``share`` of the
/// target bitrate and holding at most ``burst`` of it, each request costing a full packet; one
/// for first requests, one for their copies.
///
/// Without it, loss recovery feeds congestion: on a link six times too slow, the receiver asks
/// for most packets again, the retransmissions are lost in turn and asked for again, and the
/// sender sent 2 Mb/s, most of it retransmissions, while its encoder aimed at 200 kb/s, with no
/// frame decoded for seconds. libwebrtc likewise keeps retransmissions within its estimate.
/// Half the target, not less: a receiver sends its first request for a packet four times and
/// the sender answers each copy, so 10 % random loss asks for 40 % of the rate again (with a
/// quarter, `LossRecoveryTests` lost frames at 5 % and 10 % loss). Copies have a bucket of
/// their own: when they drew on the first requests' bucket, 10 % random loss kept it just under
/// half full, most copies were refused (120–220 in a run of the four 10 % trials), a request then
/// failed with its one retransmission (one in ten), and one run of the trials in seven gave a packet
/// up (93 % of the frames intact, under the 95 % asked).
final class RetransmissionBudget: Sendable {
  /// The share of the target retransmissions may take.
  static let share = 0.5
  /// The most the bucket holds, as time at its rate: a burst of losses is answered at once.
  static let burst = 0.5
  /// What a request costs, in bits: the largest packet.
  static let packetBits = Double(RTPSender.mtu * 8)

  /// How the receivers ask, which the budget follows.
  struct Policy: Sendable, Hashable {
    /// How long a request for a packet already answered counts as a copy of that request.
    var copyWindow: Duration
    /// The fewest packets the buckets hold, whatever the target.
    var leastPackets: Double

    /// GStreamer's jitter buffer (an RTP publication's receivers, Revue's own): it sends its
    /// first request for a packet four times within the copy window, against random loss. The
    /// buckets hold only their half second of the rate (as before the policies).
    static let rtp = Policy(copyWindow: .milliseconds(200), leastPackets: 0)

    /// WebRTC receivers (aiortc; libwebrtc's `NackRequester`): a missing packet is asked for
    /// once, and again in the next requests while it is still missing (aiortc lists every
    /// missing packet in each request it sends, and sends one only when another goes missing;
    /// libwebrtc asks again each round trip). A request after 100 ms (a round trip through a
    /// 100 ms queue) is for a retransmission that was lost, and is answered as a first one; and a
    /// burst of losses is answered in full up to 16 packets, however low the target: refused,
    /// one packet that aiortc never got froze its picture for 3–4 s (its jitter buffer waits for
    /// it until 128 packets have come), where a stream of 160–200 kb/s had a bucket of 4.5
    /// packets and lost 8 at a time (2026-12-07).
    static let webRTC = Policy(copyWindow: .milliseconds(100), leastPackets: 16)
  }

  private let policy: Policy

  private struct State {
    var rate: Double
    /// First requests' tokens, in bits.
    var tokens: Double
    /// Copies' tokens, in bits.
    var copyTokens: Double
    var last: ContinuousClock.Instant?
    var refused = 0
    /// When each packet asked for lately was first answered.
    var answered: [UInt16: ContinuousClock.Instant] = [:]
  }
  private let state: Mutex<State>

  /// A budget for a stream aiming at `target` bits per second, full, for receivers that ask as
  /// `policy` says.
  init(target: Int, policy: Policy = .rtp) {
    let rate = Double(target) * Self.share
    self.policy = policy
    let full = max(rate * Self.burst, policy.leastPackets * Self.packetBits)
    state = Mutex(State(rate: rate, tokens: full, copyTokens: full))
  }

  /// Follows a new target.
  func setTarget(_ target: Int) { state.withLock { $0.rate = Double(target) * Self.share } }

  /// Whether a request for packet `sequence` at `now` may be answered; takes its cost if so,
  /// counts it as refused if not. A copy of a request answered within ``Policy/copyWindow`` (receivers
  /// send their first request several times, against random loss) is answered from the copies'
  /// bucket, and only while the first requests' bucket is more than half full: on a congested
  /// path, where first requests drain it, each copy's retransmission would only add to the queue
  /// (with four copies answered, a stream through a 250 kb/s cap kept 25 fps instead of 29).
  func allows(_ sequence: UInt16?, at now: ContinuousClock.Instant) -> Bool {
    state.withLock { state in
      let full = max(state.rate * Self.burst, policy.leastPackets * Self.packetBits)
      if let last = state.last {
        let earned = state.rate * max(0, Double((now - last) / .microseconds(1)) / 1e6)
        state.tokens = min(full, state.tokens + earned)
        state.copyTokens = min(full, state.copyTokens + earned)
      }
      state.last = now
      state.answered = state.answered.filter { now - $0.value < policy.copyWindow }
      if let sequence, state.answered[sequence] != nil {
        guard state.tokens >= full / 2, state.copyTokens >= Self.packetBits else {
          state.refused += 1
          return false
        }
        state.copyTokens -= Self.packetBits
        return true
      }
      guard state.tokens >= Self.packetBits else {
        state.refused += 1
        return false
      }
      state.tokens -= Self.packetBits
      if let sequence { state.answered[sequence] = now }
      return true
    }
  }

  /// Requests refused so far.
  var refused: Int { state.withLock { $0.refused } }
}

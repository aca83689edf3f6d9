import Foundation

/// Why the target bitrate of a video stream last changed (``LocalTrackPublication/Statistics/targetBitrateReason``).
public enum BitrateChangeReason: Sendable, Hashable, CustomStringConvertible {
  /// It has not changed: the layer's ``VideoEncoding/maxBitrate``, where every stream starts.
  case initial
  /// Receiver reports came back clean (under 2 % lost, no queue building): it went up.
  case increase
  /// It went up to the layer's ``VideoEncoding/maxBitrate``, the most it may be.
  case ceiling
  /// The receiver lost more than 10 % of the packets while a queue built, or more than a quarter
  /// over a second (this fraction, 0…1, the larger of the latest report's and the second's): it
  /// went down to a little below what the receiver got.
  case loss(Double)
  /// The receiver asked for this many packets again (RTCP NACK) within a quarter of a second:
  /// a queue overflowed on the way, and it went down a fifth at once, before the next report.
  case retransmissionRequests(Int)
  /// The round-trip time (this one) rose well above the least seen lately, before any loss:
  /// a queue is building at the narrowest link, so it went down to a little below what the
  /// receiver got.
  case delay(Duration)
  /// The receiver estimated the path carries this many bits per second (RTCP REMB, from the
  /// delays of the packets it got), less than the target: it went down to that.
  case receiverEstimate(Int)

  /// A short phrase: `initial`, `increase`, `ceiling`, `loss 35%`, `4 NACKs`, `delay (RTT 180 ms)`,
  /// `REMB 240 kb/s`.
  public var description: String {
    switch self {
    case .initial: "initial"
    case .increase: "increase"
    case .ceiling: "ceiling"
    case .loss(let fraction): "loss \(Int((fraction * 100).rounded()))%"
    case .retransmissionRequests(let count): "\(count) NACKs"
    case .delay(let roundTrip): "delay (RTT \(Int(roundTrip / .milliseconds(1))) ms)"
    case .receiverEstimate(let bitrate): "REMB \(bitrate / 1000) kb/s"
    }
  }
}

/// The sender's congestion controller of one video stream: from each RTCP receiver report, and
/// each retransmission request, to the bitrate its encoder aims at.
///
/// Loss-based as libwebrtc's `SendSideBandwidthEstimation` (under 2 % lost: up; 2–10 %: hold;
/// over 10 % while a queue shows the path is full, or over a quarter over a second: down; loss
/// with no queue is the path's own, which a lower bitrate does not cure), with a delay-based part on the round-trip time (a queue building at the
/// bottleneck: hold, then down, before the queue overflows), and changes that make it fast
/// enough for video that starts at its full rate on a link of a sixth of it, and calm enough
/// that a capped stream keeps its frame rate:
/// - a decrease goes to a fraction of the rate the receiver actually got over the last
///   interval (its packets counted from the report's sequence numbers), not to a fraction of
///   the old target: one report takes 1.5 Mb/s to just under a 250 kb/s link;
/// - a burst of retransmission requests (RTCP NACK) while a queue shows is taken as loss at
///   once, a report sooner;
/// - growth is gentle (``gentleIncreasePerSecond``, and never more than a little above what
///   arrived) after a decrease, until the reports show neither loss nor queue for
///   ``calmWindow``: then the path has grown, and growth is fast (``increasePerSecond``), so
///   that a stream cut to a sixth climbs back within ten seconds when the link clears;
/// - the encoder is asked for the target less what the stream has lately sent above what its
///   encoder was asked for (retransmissions, headers, rate-control overshoot), so that what is
///   sent, not what is encoded, is the target.
///
/// Pure and deterministic: no clock is read and nothing is set; the time of each report is
/// given. docs/congestion-control.md has the reasoning, the measurements behind each constant
/// and the measured curve.
struct BitrateController: Sendable {
  /// One receiver report on the stream, with the sender's own counters at its arrival.
  struct Report: Sendable, Hashable {
    /// When the report arrived, from any fixed origin.
    var time: Duration
    /// The fraction of packets lost since the receiver's previous report, 0…1.
    var fractionLost: Double
    /// Packets the receiver lost since the start.
    var packetsLost: Int
    /// The receiver's extended highest sequence number.
    var highestSequence: UInt32
    /// The round-trip time this report gave, nil when it answered no sender report.
    var roundTrip: Duration?
    /// The receiver's interarrival jitter (for the record: the controller does not use it, see
    /// the docs).
    var jitter: Duration?
    /// RTP bytes the sender sent since the start.
    var bytesSent: Int
    /// RTP packets the sender sent since the start.
    var packetsSent: Int
    /// Of those, retransmissions (RTX) since the start.
    var packetsRetransmitted = 0
  }

  // MARK: - Constants (docs/congestion-control.md says why each is what it is)

  /// Loss below which the target may go up (libwebrtc's 2 %).
  static let increaseBelowLoss = 0.02
  /// Loss above which the target goes down (libwebrtc's 10 %) when a queue shows the path is
  /// full; between the two it holds.
  static let decreaseAboveLoss = 0.10
  /// Loss over the latest ``lossWindow`` above which the target goes down with no queue to
  /// show: a path that drops a quarter of the packets is full (a policer drops without
  /// queueing). Below it, loss without a queue is the path's own (radio, a bad cable), which a
  /// lower bitrate does not cure: random loss of 5 % both ways took a 1.5 Mb/s stream to
  /// 511 kb/s in 20 s when every report over 10 % cut.
  static let heavyLoss = 0.25
  /// The time loss is counted over for ``heavyLoss``: a report of a slow stream counts a few
  /// packets, and 3 of 10 lost is chance at 5 %.
  static let lossWindow = Duration.seconds(1)
  /// A decrease for loss goes to this fraction of the rate the receiver got.
  static let lossBackoff = 0.85
  /// A decrease for queueing goes to this fraction of the rate the receiver got…
  static let delayBackoff = 0.9
  /// …but to no less than this fraction of the target: a round-trip time is a noisier sign than
  /// loss, and an encoder that sends far less than its target (a still scene) did not fill the
  /// queue.
  static let delayFloor = 0.7
  /// Queueing (round-trip time above the least of the window) in the latest report above which
  /// the target does not go up: the path is full, or about to be.
  static let queueingHold = Duration.milliseconds(8)
  /// Queueing in both of the latest two reports above which the target goes down (one late
  /// report on a busy machine is not a queue).
  static let queueingThreshold = Duration.milliseconds(25)
  /// Reports whose round-trip times make the window the least one is taken over.
  static let roundTripWindow = 60
  /// The least time between two decreases for reports: the reports right after one still show
  /// the rate before it (the encoder takes a few frames to follow, the queue to drain).
  static let decreaseInterval = Duration.seconds(1)
  /// Packets asked for again within ``burstWindow`` that make a burst…
  static let burstRequests = 5
  /// …and at least this share of the packets sent in it: random loss of 10 % asks for 3 of 15
  /// packets in one quarter second in five, and each cut shrank the retransmission budget until
  /// `LossRecoveryTests` lost frames; a queue overflowing loses far more…
  static let burstShare = 0.25
  /// …the time they come within…
  static let burstWindow = Duration.milliseconds(250)
  /// …and what a burst leaves of the target.
  static let burstBackoff = 0.8
  /// Growth per second after a decrease, until the path shows it has grown.
  static let gentleIncreasePerSecond = 0.2
  /// While growth is gentle, the target goes no further than this many times what arrived.
  static let gentleHeadroom = 1.15
  /// The path has grown once every report for this long came back calm: no loss and no queue
  /// (at most ``calmQueueing``). Under a cap, each keyframe (every 2 s) and frames near the cap
  /// queue at the bottleneck; with the cap gone, nothing does. What arrived says less: a
  /// report of a 250 kb/s stream counts 6–16 packets and read up to 400 kb/s through a
  /// 250 kb/s link, and an encoder that sends 0.8–0.9 of its target stays under any rate that
  /// choked the path.
  static let calmWindow = Duration.milliseconds(2500)
  /// The most queueing (round-trip time above the least of the window) of a calm report.
  static let calmQueueing = Duration.milliseconds(5)
  /// Growth per second otherwise.
  static let increasePerSecond = 0.6
  /// An increase goes no further than this many times the rate the receiver got, and 10 kb/s
  /// (libwebrtc's rule, with 1.5 there: the encoder here lags a target that grows 60 % a second
  /// by about a report).
  static let headroom = 2.0
  /// The most the encoder's bitrate is lowered below the target for the stream's overshoot.
  static let largestOvershoot = 1.4
  /// How much of each report's overshoot goes into the smoothed one.
  static let overshootSmoothing = 0.3
  /// The longest time between reports an increase counts (a stream that went quiet does not
  /// jump on its next report).
  static let longestInterval = Duration.seconds(2)
  /// The least target of any stream (libwebrtc's least video bitrate), unless its ceiling is lower.
  static let minimumBitrate = 30_000
  /// Bits per pixel of a frame at the layer's full frame rate below which frames are halved.
  static let halvingBitsPerPixel = 0.004
  /// The target must rise this much above the halving floor before the full rate comes back.
  static let halvingHysteresis = 1.25

  // MARK: - State

  /// The most the target may be: the layer's maxBitrate.
  let ceiling: Int
  /// The least the target may be.
  let floor: Int
  /// Below this target every other frame is dropped before the encoder; nil: never.
  let halvingFloor: Int?
  /// The bitrate the stream aims to send, in bits per second.
  private(set) var target: Int
  /// Why ``target`` last changed.
  private(set) var reason = BitrateChangeReason.initial
  /// Whether every other frame is dropped before the encoder.
  private(set) var halvesFrameRate = false
  /// What the encoder is asked for: ``target`` divided by how far the stream's packets
  /// (retransmissions, headers and the encoder's own overshoot included) have lately come out
  /// above what the encoder was asked for, so that what is sent is the target; at the ceiling,
  /// the ceiling itself (a path that is not limiting changes nothing to the encoder's settings).
  var encoderBitrate: Int {
    target >= ceiling ? ceiling : max(floor, Int((Double(target) / overshoot).rounded()))
  }
  /// How far the stream sent above what the encoder was asked for, smoothed over the reports:
  /// 1 (no more) to ``largestOvershoot``.
  private(set) var overshoot = 1.0
  /// The rate the receiver got over the interval before the latest report, in bits per
  /// second; nil before two reports.
  private(set) var received: Double?
  /// Whether growth is gentle: from a decrease until the path is calm for ``calmWindow``.
  private(set) var gentle = false
  /// Since when every report has been calm (``calmWindow``); nil when the latest was not, or
  /// the target went down since.
  private var calmSince: Duration?
  /// The packets the stream sent per second over the latest report's interval.
  private(set) var packetRate = 0.0
  /// The previous report that counted.
  private var previous: Report?
  /// The reports of the latest ``lossWindow`` and the one before it, oldest first: when, and
  /// the receiver's cumulative lost count and highest sequence number.
  private var lossHistory: [(time: Duration, lost: Int, highest: UInt32)] = []
  /// Whether the latest report showed a queue (over ``queueingHold``): loss and bursts of
  /// retransmission requests are congestion then.
  private var queueing = false
  /// The latest round-trip times, oldest first (at most ``roundTripWindow``).
  private var roundTrips: [Duration] = []
  /// When the target last went down, for any reason…
  private var lastDecrease: Duration?
  /// …and for a report.
  private var lastReportedDecrease: Duration?
  /// The receiver's latest estimate of what the path carries (RTCP REMB), which the target
  /// never exceeds; nil when it sent none.
  private(set) var receiverLimit: Int?
  /// The retransmission requests of the latest ``burstWindow``, oldest first from
  /// ``requestsStart``: when, and for which packet.
  private var requests: [(time: Duration, sequence: UInt16)] = []
  private var requestsStart = 0
  /// The packets of ``requests``, each with its number of requests: the packets asked for are
  /// counted at no cost, whatever the number of copies (a flood cost each request a scan of all).
  private var requestedPackets: [UInt16: Int] = [:]

  /// A controller for a stream of at most `ceiling` bits per second, which starts there or at
  /// `start`.
  /// - Parameter halvingFloor: the target below which the frame rate is halved (nil: never);
  ///   ``halvingFloor(width:height:fps:)`` gives it for a layer.
  /// - Parameter start: the target to start at (nil: the ceiling), kept between the floor and
  ///   the ceiling. A start below the ceiling is a guess at a path not known yet: growth from it
  ///   is gentle until the path shows calm, as after a decrease (grown fast from a WHIP
  ///   publication's start, the target passed a 250 kb/s cap by 1.2–1.7 times within 3 s, and
  ///   the receiver's estimate cut it back, in 4 of 6 runs on 2026-12-07).
  init(ceiling: Int, halvingFloor: Int? = nil, start: Int? = nil) {
    let ceiling = max(1, ceiling)
    let floor = min(Self.minimumBitrate, ceiling)
    self.ceiling = ceiling
    self.floor = floor
    self.halvingFloor = halvingFloor.flatMap { $0 > floor ? $0 : nil }
    target = ceiling
    if let start, start < ceiling {
      set(Double(start), .initial)
      gentle = true
    }
  }

  /// The target below which a layer of `width`×`height` at `fps` halves its frame rate:
  /// ``halvingBitsPerPixel`` a pixel of each frame (110 kb/s for 1280×720 at 30 fps, 37 kb/s
  /// for 640×480).
  static func halvingFloor(width: Int, height: Int, fps: Int) -> Int {
    Int(Double(width * height * fps) * halvingBitsPerPixel)
  }

  /// Takes a receiver report in; returns whether ``encoderBitrate`` or ``halvesFrameRate`` changed.
  ///
  /// A report of a stream that has sent nothing (before its first packet, or since the
  /// previous report) changes nothing.
  @discardableResult
  mutating func update(_ report: Report) -> Bool {
    guard report.packetsSent > 0 else { return false }
    let before = (encoderBitrate, halvesFrameRate)
    defer { previous = report }
    if let roundTrip = report.roundTrip {
      roundTrips.append(roundTrip)
      if roundTrips.count > Self.roundTripWindow { roundTrips.removeFirst() }
    }
    let windowLoss = lossOverWindow(report)
    guard let previous else {
      // The first report: nothing to measure a rate over yet, nor a queue; heavy loss still
      // cuts by libwebrtc's rule.
      if report.fractionLost > Self.heavyLoss {
        decrease(to: Double(target) * (1 - report.fractionLost / 2), .loss(report.fractionLost), at: report.time)
      }
      return (encoderBitrate, halvesFrameRate) != before
    }
    let packetsSent = report.packetsSent - previous.packetsSent
    let seconds = Double((report.time - previous.time) / .microseconds(1)) / 1e6
    guard packetsSent > 0, seconds > 0 else { return false }
    packetRate = Double(packetsSent) / seconds
    // What the encoder was asked for over the interval is what it was set to at its start.
    let sentRate = Double(report.bytesSent - previous.bytesSent) * 8 / seconds
    overshoot += (min(Self.largestOvershoot, max(1, sentRate / Double(before.0))) - overshoot) * Self.overshootSmoothing
    let received = receivedRate(since: previous, report, packetsSent: packetsSent, seconds: seconds)
    self.received = received
    let least = roundTrips.min()
    let latestQueueing = report.roundTrip.flatMap { roundTrip in least.map { roundTrip - $0 } }
    let lastingQueueing = report.roundTrip.flatMap { _ in least.map { roundTrips.suffix(2).min()! - $0 } }
    let mayDecrease = lastReportedDecrease.map { report.time - $0 >= Self.decreaseInterval } ?? true
    queueing = (latestQueueing ?? .zero) > Self.queueingHold
    if report.fractionLost == 0, let latestQueueing, latestQueueing <= Self.calmQueueing {
      calmSince = calmSince ?? previous.time
    } else {
      calmSince = nil
    }

    if (report.fractionLost > Self.decreaseAboveLoss && queueing) || windowLoss > Self.heavyLoss {
      let lost = max(report.fractionLost, windowLoss)
      if mayDecrease, decrease(to: received * Self.lossBackoff, .loss(lost), at: report.time) {
        lastReportedDecrease = report.time
      }
    } else if let lastingQueueing, let roundTrip = report.roundTrip, lastingQueueing > Self.queueingThreshold {
      let cut = max(received * Self.delayBackoff, Double(target) * Self.delayFloor)
      if mayDecrease, decrease(to: cut, .delay(roundTrip), at: report.time) {
        lastReportedDecrease = report.time
      }
    } else if report.fractionLost < Self.increaseBelowLoss, (latestQueueing ?? .zero) <= Self.queueingHold,
      target < ceiling
    {
      if let calmSince, report.time - calmSince >= Self.calmWindow { gentle = false }
      let counted = min(seconds, Double(Self.longestInterval / .milliseconds(1)) / 1000)
      // An encoder that does not use its target (a still scene) does not learn what the path
      // carries: the target goes no further than a little (gentle) or twice (fast) what arrived.
      let raised =
        !gentle
        ? min(Double(target) * pow(1 + Self.increasePerSecond, counted), received * Self.headroom + 10_000)
        : min(Double(target) * pow(1 + Self.gentleIncreasePerSecond, counted), received * Self.gentleHeadroom)
      let limited = min(raised, Double(receiverLimit ?? .max))
      if limited > Double(target) { set(limited, limited >= Double(ceiling) ? .ceiling : .increase) }
    }
    return (encoderBitrate, halvesFrameRate) != before
  }

  /// The fraction of packets lost over the latest ``lossWindow`` (or since the first report),
  /// from the receiver's cumulative counts; keeps the window's reports.
  private mutating func lossOverWindow(_ report: Report) -> Double {
    lossHistory.append((report.time, report.packetsLost, report.highestSequence))
    // The oldest kept is the latest at least a window before this report.
    while lossHistory.count > 2, report.time - lossHistory[1].time >= Self.lossWindow { lossHistory.removeFirst() }
    let oldest = lossHistory[0]
    guard report.time - oldest.time >= Self.lossWindow else { return 0 }
    let expected = Int(report.highestSequence &- oldest.highest)
    return expected > 0 ? Double(max(0, report.packetsLost - oldest.lost)) / Double(expected) : 0
  }

  /// Takes in a retransmission request (an RTCP NACK) for packet `sequence` that came at
  /// `time`: requests for ``burstRequests`` different packets within ``burstWindow`` mean a
  /// queue overflowed, and the target goes down by ``burstBackoff`` at once, a report sooner
  /// than loss would show (at most once per ``decreaseInterval``). Copies of a request (a
  /// receiver sends its first one four times) count once. Returns whether ``encoderBitrate``
  /// or ``halvesFrameRate`` changed.
  @discardableResult
  mutating func retransmissionRequested(_ sequence: UInt16, at time: Duration) -> Bool {
    requests.append((time, sequence))
    requestedPackets[sequence, default: 0] += 1
    while requestsStart < requests.count, time - requests[requestsStart].time > Self.burstWindow {
      let old = requests[requestsStart].sequence
      requestedPackets[old] = requestedPackets[old].flatMap { $0 > 1 ? $0 - 1 : nil }
      requestsStart += 1
    }
    if requestsStart > 1024, requestsStart * 2 > requests.count {
      requests.removeFirst(requestsStart)
      requestsStart = 0
    }
    let packets = requestedPackets.count
    // A share of what was sent in the window, not a count: random loss on a fast stream asks
    // for a few packets in any quarter second.
    let sent = packetRate * Double(Self.burstWindow / .milliseconds(1)) / 1000
    // Only while a queue shows the path is full: random loss asks for packets in bursts too
    // (a lost keyframe's several packets), and lowering the bitrate does not cure it.
    guard queueing, packets >= max(Self.burstRequests, Int((sent * Self.burstShare).rounded(.up))),
      lastDecrease.map({ time - $0 >= Self.decreaseInterval }) ?? true
    else { return false }
    let before = (encoderBitrate, halvesFrameRate)
    decrease(to: Double(target) * Self.burstBackoff, .retransmissionRequests(packets), at: time)
    requests.removeAll()
    requestsStart = 0
    requestedPackets.removeAll()
    return (encoderBitrate, halvesFrameRate) != before
  }

  /// Takes in the receiver's estimate of what the path carries (RTCP REMB) that came at `time`:
  /// the target never goes above it (libwebrtc's rule), and goes down to it at once when above.
  /// Returns whether ``encoderBitrate`` or ``halvesFrameRate`` changed.
  @discardableResult
  mutating func receiverEstimated(_ bitsPerSecond: Int, at time: Duration) -> Bool {
    receiverLimit = bitsPerSecond
    let before = (encoderBitrate, halvesFrameRate)
    if bitsPerSecond < target { decrease(to: Double(bitsPerSecond), .receiverEstimate(bitsPerSecond), at: time) }
    return (encoderBitrate, halvesFrameRate) != before
  }

  /// The rate the receiver got between two reports, in bits per second: the media packets it
  /// got (its highest sequence number's advance less its lost packets' growth, at most twice
  /// what was sent), each counted as the bytes the sender sent in the interval per media packet
  /// sent (so that retransmissions, which have sequence numbers of their own, count in the
  /// share that media packets got through).
  private func receivedRate(since previous: Report, _ report: Report, packetsSent: Int, seconds: Double) -> Double {
    let advance = Int(report.highestSequence &- previous.highestSequence)
    let lost = report.packetsLost - previous.packetsLost
    let media = max(1, packetsSent - max(0, report.packetsRetransmitted - previous.packetsRetransmitted))
    let packets = min(max(0, advance - lost), 2 * media)
    return Double(packets) * Double(report.bytesSent - previous.bytesSent) / Double(media) * 8 / seconds
  }

  /// Lowers the target to `rate` for `reason`, at `time`, and makes growth gentle until the
  /// path is calm again; returns false (and changes nothing) when that is not lower.
  @discardableResult
  private mutating func decrease(to rate: Double, _ reason: BitrateChangeReason, at time: Duration) -> Bool {
    guard rate < Double(target) else { return false }
    lastDecrease = time
    gentle = true
    calmSince = nil
    set(rate, reason)
    return true
  }

  /// Sets the target to `rate`, kept between the floor and the ceiling, for `reason`; the frame
  /// rate halves below the halving floor and comes back once well above it.
  private mutating func set(_ rate: Double, _ reason: BitrateChangeReason) {
    let clamped = Int(min(Double(ceiling), max(Double(floor), rate.rounded())))
    if clamped != target {
      target = clamped
      self.reason = reason
    }
    if let halvingFloor {
      if target < halvingFloor {
        halvesFrameRate = true
      } else if Double(target) >= Double(halvingFloor) * Self.halvingHysteresis {
        halvesFrameRate = false
      }
    }
  }
}

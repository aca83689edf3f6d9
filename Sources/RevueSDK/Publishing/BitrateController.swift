import Foundation

/// Why the target bitrate of a video stream last changed (``LocalTrackPublication/Statistics/targetBitrateReason``).
public enum BitrateChangeReason: Sendable, Hashable, CustomStringConvertible {
  /// It has not changed: the layer's ``VideoEncoding/maxBitrate``, where every stream starts.
  case initial
  /// Receiver reports came back clean (under 2 % lost, no queue building): it went up.
  case increase
  /// It went up to the layer's ``VideoEncoding/maxBitrate``, the most it may be.
  case ceiling
  /// The receiver lost more than 10 % of the packets (this fraction, 0…1, of the latest report):
  /// it went down to a little below what the receiver got.
  case loss(Double)
  /// The round-trip time (this one) rose well above the least seen lately, before any loss:
  /// a queue is building at the narrowest link, so it went down to a little below what the
  /// receiver got.
  case delay(Duration)

  /// A short phrase: `initial`, `increase`, `ceiling`, `loss 35%`, `delay (RTT 180 ms)`.
  public var description: String {
    switch self {
    case .initial: "initial"
    case .increase: "increase"
    case .ceiling: "ceiling"
    case .loss(let fraction): "loss \(Int((fraction * 100).rounded()))%"
    case .delay(let roundTrip): "delay (RTT \(Int(roundTrip / .milliseconds(1))) ms)"
    }
  }
}

/// The sender's congestion controller of one video stream: from each RTCP receiver report to
/// the bitrate its encoder aims at.
///
/// Loss-based as libwebrtc's `SendSideBandwidthEstimation` (under 2 % lost: up; 2–10 %: hold;
/// over 10 %: down), with a delay-based part on the round-trip time (a queue building at the
/// bottleneck: down, before the queue overflows), and two changes that make it fast enough for
/// video that starts at its full rate on a link of a sixth of it:
/// - a decrease goes to a fraction of the rate the receiver actually got over the last
///   interval (its packets counted from the report's sequence numbers, at the sender's mean
///   packet size), not to a fraction of the old target: one report takes 1.5 Mb/s to just
///   under a 250 kb/s link;
/// - an increase is multiplicative per second of reports: gentle (``gentleIncreasePerSecond``)
///   up to a little above what the path carried when it was last seen full, so that a capped
///   stream creeps up to the cap and is caught by the queue building there rather than by
///   loss; fast (``increasePerSecond``) beyond, so that a stream cut to a sixth climbs back
///   within ten seconds when the link clears.
///
/// Pure and deterministic: no clock is read and nothing is set; the time of each report is
/// given. docs/congestion-control.md has the reasoning and the measured curve.
struct BitrateController: Sendable, Hashable {
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
  }

  // MARK: - Constants (docs/congestion-control.md says why each is what it is)

  /// Loss below which the target goes up (libwebrtc's 2 %).
  static let increaseBelowLoss = 0.02
  /// Loss above which the target goes down (libwebrtc's 10 %); between the two it holds.
  static let decreaseAboveLoss = 0.10
  /// A decrease for loss goes to this fraction of the rate the receiver got.
  static let lossBackoff = 0.85
  /// A decrease for queueing goes to this fraction of the rate the receiver got…
  static let delayBackoff = 0.9
  /// …but to no less than this fraction of the target: a round-trip time is a noisier sign than
  /// loss, and an encoder that sends far less than its target (a still scene) did not fill the
  /// queue.
  static let delayFloor = 0.7
  /// Queueing (round-trip time above the least of the window) that counts as congestion.
  static let queueingThreshold = Duration.milliseconds(30)
  /// Queueing above which the target holds rather than goes up: the path is full.
  static let queueingHold = Duration.milliseconds(15)
  /// Reports whose round-trip times make the window the least one is taken over.
  static let roundTripWindow = 30
  /// Growth per second of reports above ``gentleBand`` times the path's capacity.
  static let increasePerSecond = 0.5
  /// Growth per second of reports below that.
  static let gentleIncreasePerSecond = 0.2
  /// How far above the path's capacity (what it carried when last seen full) growth stays gentle.
  static let gentleBand = 1.2
  /// The reports whose received rates the capacity is the most of, when the path is seen full.
  static let capacityWindow = 5
  /// An increase goes no further than this many times the rate the receiver got, and 10 kb/s
  /// (libwebrtc's rule, with 1.5 there: the encoder here lags a target that grows 50 % a second
  /// by about a report, and 1.5 held the climb back).
  static let headroom = 2.0
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
  /// The bitrate the encoder aims at, in bits per second.
  private(set) var target: Int
  /// Why ``target`` last changed.
  private(set) var reason = BitrateChangeReason.initial
  /// Whether every other frame is dropped before the encoder.
  private(set) var halvesFrameRate = false
  /// The previous report that counted.
  private var previous: Report?
  /// The latest round-trip times, oldest first (at most ``roundTripWindow``).
  private var roundTrips: [Duration] = []
  /// What the path carried when it was last seen full (loss, or a queue building): the most
  /// the receiver got over the latest few reports then, in bits per second; nil before it was.
  private(set) var capacity: Double?
  /// The rates the receiver got over the latest intervals, oldest first (at most ``capacityWindow``).
  private var receivedRates: [Double] = []
  /// The rate the receiver got over the interval before the latest report, in bits per
  /// second; nil before two reports.
  private(set) var received: Double?

  /// A controller for a stream of at most `ceiling` bits per second, which starts there.
  /// - Parameter halvingFloor: the target below which the frame rate is halved (nil: never);
  ///   ``halvingFloor(width:height:fps:)`` gives it for a layer.
  init(ceiling: Int, halvingFloor: Int? = nil) {
    let ceiling = max(1, ceiling)
    let floor = min(Self.minimumBitrate, ceiling)
    self.ceiling = ceiling
    self.floor = floor
    self.halvingFloor = halvingFloor.flatMap { $0 > floor ? $0 : nil }
    target = ceiling
  }

  /// The target below which a layer of `width`×`height` at `fps` halves its frame rate:
  /// ``halvingBitsPerPixel`` a pixel of each frame (110 kb/s for 1280×720 at 30 fps, 37 kb/s
  /// for 640×480).
  static func halvingFloor(width: Int, height: Int, fps: Int) -> Int {
    Int(Double(width * height * fps) * halvingBitsPerPixel)
  }

  /// Takes a receiver report in; returns whether ``target`` or ``halvesFrameRate`` changed.
  ///
  /// A report of a stream that has sent nothing (before its first packet, or since the
  /// previous report) changes nothing.
  @discardableResult
  mutating func update(_ report: Report) -> Bool {
    guard report.packetsSent > 0 else { return false }
    let before = (target, halvesFrameRate)
    defer { previous = report }
    if let roundTrip = report.roundTrip {
      roundTrips.append(roundTrip)
      if roundTrips.count > Self.roundTripWindow { roundTrips.removeFirst() }
    }
    guard let previous else {
      // The first report: nothing to measure a rate over yet; heavy loss still cuts by
      // libwebrtc's rule.
      if report.fractionLost > Self.decreaseAboveLoss {
        set(Double(target) * (1 - report.fractionLost / 2), .loss(report.fractionLost))
      }
      return (target, halvesFrameRate) != before
    }
    let packetsSent = report.packetsSent - previous.packetsSent
    let seconds = Double((report.time - previous.time) / .microseconds(1)) / 1e6
    guard packetsSent > 0, seconds > 0 else { return false }
    let received = receivedRate(since: previous, report, packetsSent: packetsSent, seconds: seconds)
    self.received = received
    receivedRates.append(received)
    if receivedRates.count > Self.capacityWindow { receivedRates.removeFirst() }
    let queueing = report.roundTrip.flatMap { roundTrip in roundTrips.min().map { roundTrip - $0 } }
    if report.fractionLost >= Self.increaseBelowLoss || (queueing ?? .zero) > Self.queueingHold {
      capacity = receivedRates.max()
    }

    if report.fractionLost > Self.decreaseAboveLoss {
      let cut = received * Self.lossBackoff
      if cut < Double(target) {
        set(cut, .loss(report.fractionLost))
      }
    } else if let queueing, let roundTrip = report.roundTrip, queueing > Self.queueingThreshold {
      let cut = max(received * Self.delayBackoff, Double(target) * Self.delayFloor)
      if cut < Double(target) {
        set(cut, .delay(roundTrip))
      }
    } else if report.fractionLost < Self.increaseBelowLoss, (queueing ?? .zero) <= Self.queueingHold, target < ceiling {
      let gentle = capacity.map { Double(target) < $0 * Self.gentleBand } ?? false
      let growth = 1 + (gentle ? Self.gentleIncreasePerSecond : Self.increasePerSecond)
      let counted = min(seconds, Double(Self.longestInterval / .milliseconds(1)) / 1000)
      // An encoder that does not use its target (a still scene) does not learn what the path
      // carries: the target goes no further than twice what the receiver got.
      let raised = min(Double(target) * pow(growth, counted), received * Self.headroom + 10_000)
      if raised > Double(target) { set(raised, raised >= Double(ceiling) ? .ceiling : .increase) }
    }
    return (target, halvesFrameRate) != before
  }

  /// The rate the receiver got between two reports, in bits per second: the packets it got
  /// (its highest sequence number's advance less its lost packets' growth, at most twice what
  /// was sent) at the sender's mean packet size over the interval.
  private func receivedRate(since previous: Report, _ report: Report, packetsSent: Int, seconds: Double) -> Double {
    let advance = Int(report.highestSequence &- previous.highestSequence)
    let lost = report.packetsLost - previous.packetsLost
    let packets = min(max(0, advance - lost), 2 * packetsSent)
    let meanSize = Double(report.bytesSent - previous.bytesSent) / Double(packetsSent)
    return Double(packets) * meanSize * 8 / seconds
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

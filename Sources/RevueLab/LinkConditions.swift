import Foundation

/// What a link does to the packets that cross it one way: loss, delay, jitter, reordering,
/// duplication, a bottleneck of limited bandwidth with a buffer, or an outage.
///
/// Out-of-range values are clamped where they are used: probabilities to 0...1, durations to 0
/// or more, bandwidth to 1 bit/s or more.
public struct LinkConditions: Sendable, Hashable {
  /// The probability that a packet is lost, 0...1, drawn independently for each packet.
  public var loss: Double
  /// The one-way base delay.
  public var delay: Duration
  /// Each packet's delay is `delay` plus or minus a uniform draw of up to `jitter` (never below
  /// zero). Packets still leave in the order they came (a packet drawn shorter than the one before
  /// it waits for it), unless ``reorder`` lets them out of order, so at high packet rates the
  /// delays bunch towards `delay + jitter`.
  public var jitter: Duration
  /// The probability that a packet ignores the order rule of ``jitter`` and leaves after its own
  /// delay, so that it can overtake packets that came before it or be overtaken by later ones.
  /// Packets are reordered only when their delays differ: this needs ``jitter``.
  public var reorder: Double
  /// The probability that a packet is sent twice (both copies leave at once).
  public var duplicate: Double
  /// The bottleneck's rate in bits per second, or nil for no limit: packets queue first in, first
  /// out and leave at this rate, each taking `size * 8 / bandwidth` seconds of the link.
  public var bandwidth: Int?
  /// The bottleneck's buffer, as the longest wait in it at ``bandwidth``: a packet that would
  /// wait longer is dropped (tail drop). Without a bandwidth it does nothing.
  public var queue: Duration
  /// Whether the link is cut: every packet that comes, and every packet still on its way, is
  /// dropped.
  public var isDown: Bool

  /// A link with these conditions; the defaults make a perfect link (with a 100 ms buffer should
  /// a bandwidth be set).
  public init(
    loss: Double = 0, delay: Duration = .zero, jitter: Duration = .zero, reorder: Double = 0, duplicate: Double = 0,
    bandwidth: Int? = nil, queue: Duration = .milliseconds(100), isDown: Bool = false
  ) {
    self.loss = loss
    self.delay = delay
    self.jitter = jitter
    self.reorder = reorder
    self.duplicate = duplicate
    self.bandwidth = bandwidth
    self.queue = queue
    self.isDown = isDown
  }

  /// A link that loses, delays, reorders and duplicates nothing, at any rate.
  public static let perfect = LinkConditions()
}

extension Duration {
  /// This duration in whole nanoseconds, 0 when negative, at most a day.
  var clampedNanoseconds: UInt64 {
    let (seconds, attoseconds) = components
    guard seconds >= 0, attoseconds >= 0 || seconds > 0 else { return 0 }
    guard seconds < 86_400 else { return 86_400 * 1_000_000_000 }
    return UInt64(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
  }
}

extension LinkConditions: CustomStringConvertible {
  /// The conditions in a few words, such as "loss 5%, delay 40 ms ± 10 ms".
  public var description: String {
    func percent(_ value: Double) -> String { String(format: "%g%%", value * 100) }
    func milliseconds(_ value: Duration) -> String {
      String(format: "%g ms", Double(value / .microseconds(1)) / 1000)
    }
    var parts: [String] = []
    if loss > 0 { parts.append("loss \(percent(loss))") }
    if delay > .zero || jitter > .zero {
      parts.append("delay \(milliseconds(delay))" + (jitter > .zero ? " ± \(milliseconds(jitter))" : ""))
    }
    if reorder > 0 { parts.append("reorder \(percent(reorder))") }
    if duplicate > 0 { parts.append("duplicate \(percent(duplicate))") }
    if let bandwidth { parts.append("rate \(bandwidth / 1000) kbps with a \(milliseconds(queue)) queue") }
    if isDown { parts.append("down") }
    return parts.isEmpty ? "perfect" : parts.joined(separator: ", ")
  }
}

/// Judges the frames a receiver showed against those a reference receiver showed of the same
/// stream: how many were shown intact, and how long the picture froze.
///
/// The reference receives every packet the sender sent (a lossless path, same receiving code),
/// so its frames are what the sender's stream decodes to. Both run a ``FrameProbe``, and both
/// probes' times must come from this process (they are on ``ContinuousClock``).
///
/// Definitions, over a window of frame numbers (`window`, so that start-up is left out):
/// - **Sent**: the frames numbered in the window that the reference showed (its first showing
///   of each number: its hash and time).
/// - **Shown**: those of them the tested receiver showed at least once, intact or not.
/// - **Intact**: those of them the tested receiver showed at least once with the reference's
///   hash: the very same pixels.
/// - **Delay**: the median, over the intact frames, of the time from the reference's showing of
///   a frame to the tested receiver's first intact showing of it (the link's extra latency).
/// - **Freezes**: the window opens at the tested receiver at the reference's first showing of a
///   sent frame plus the delay, and closes at its last plus the delay (no intact frame: a delay
///   of zero). Take the times, inside that span, of the tested receiver's first intact showing of
///   each sent frame, in order, with the opening and the closing: a freeze is the time between
///   two consecutive ones, the time the viewer waited for the next intact picture. A stream shown
///   whole has freezes of about one frame interval; one that shows nothing intact freezes for
///   the whole window.
/// - **Left out** (optional, for an outage): frames numbered in a range inside the window are
///   not judged: not sent, not shown, not intact. The window is then two spans, before and after
///   them, and freezes are taken in each span as above (each with its own opening and closing),
///   so the time across the left-out frames is no freeze; the wait after them for the first intact
///   frame is.
public enum FrameJudge {
  /// What a judge found.
  public struct Verdict: Sendable, Hashable, CustomStringConvertible {
    /// The frame numbers judged.
    public var window: Range<Int>
    /// Frames numbered in the window that the reference showed.
    public var framesSent: Int
    /// Of those, the frames the tested receiver showed, intact or not.
    public var framesShown: Int
    /// Of those, the frames the tested receiver showed with exactly the reference's pixels.
    public var framesIntact: Int
    /// The median time from the reference's showing of an intact frame to the tested
    /// receiver's; nil when no frame was intact.
    public var delay: Duration?
    /// The longest freeze (see ``FrameJudge``); zero when the reference showed no frame.
    public var longestFreeze: Duration
    /// The freeze that counts in ``freezesOverThreshold``.
    public var freezeThreshold: Duration
    /// Freezes longer than ``freezeThreshold``.
    public var freezesOverThreshold: Int
    /// The frames left out of the judgement (an outage), if any.
    public var leftOut: Range<Int>? = nil

    /// Frames shown but not intact: decoded from a broken reference, or broken themselves.
    public var framesCorrupted: Int { framesShown - framesIntact }

    /// The share of the frames sent that were shown intact, 0 to 1 (1 when none were sent).
    public var fractionIntact: Double { framesSent == 0 ? 1 : Double(framesIntact) / Double(framesSent) }

    /// One line for notes, such as `frames 30..<930: 885 of 900 intact (98.3%), 890 shown, 5
    /// corrupted; longest freeze 167 ms, 0 over 200 ms; 31 ms behind the reference`.
    public var description: String {
      let percent = (fractionIntact * 1000).rounded() / 10
      let behind = delay.map { "; \(Self.milliseconds($0)) ms behind the reference" } ?? ""
      return "frames \(window): \(framesIntact) of \(framesSent) intact (\(percent)%), \(framesShown) shown,"
        + " \(framesCorrupted) corrupted; longest freeze \(Self.milliseconds(longestFreeze)) ms,"
        + " \(freezesOverThreshold) over \(Self.milliseconds(freezeThreshold)) ms\(behind)"
        + (leftOut.map { "; frames \($0) left out" } ?? "")
    }

    private static func milliseconds(_ duration: Duration) -> Int {
      Int((Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15).rounded())
    }
  }

  /// Judges the `tested` receiver's frames against the `reference`'s, over the frames numbered
  /// in `window` but those in `leavingOut`, counting the freezes longer than `freezeThreshold`.
  public static func judge(
    reference: [FrameProbe.Record], tested: [FrameProbe.Record], window: Range<Int>,
    freezeThreshold: Duration = .milliseconds(200), leavingOut gap: Range<Int>? = nil
  ) -> Verdict {
    let gap = gap.map { $0.clamped(to: window) }.flatMap { $0.isEmpty ? nil : $0 }
    // The reference's first showing of each number in the window.
    var sent: [Int: FrameProbe.Record] = [:]
    for record in reference
    where window.contains(record.number) && !(gap?.contains(record.number) ?? false) && sent[record.number] == nil {
      sent[record.number] = record
    }
    // The tested receiver's first intact showing of each sent number, and the numbers it showed.
    var shown = Set<Int>()
    var intact: [Int: ContinuousClock.Instant] = [:]
    for record in tested {
      guard let original = sent[record.number] else { continue }
      shown.insert(record.number)
      if record.hash == original.hash, intact[record.number] == nil { intact[record.number] = record.time }
    }
    let lags = intact.map { number, time in sent[number]!.time.duration(to: time) }.sorted()
    let delay = lags.isEmpty ? nil : lags[lags.count / 2]

    var longest = Duration.zero
    var over = 0
    let spans = gap.map { [window.lowerBound..<$0.lowerBound, $0.upperBound..<window.upperBound] } ?? [window]
    for span in spans {
      let referenceTimes = sent.filter { span.contains($0.key) }.map(\.value.time)
      guard let first = referenceTimes.min(), let last = referenceTimes.max() else { continue }
      let opening = first + (delay ?? .zero)
      let closing = last + (delay ?? .zero)
      let shownIntact = intact.filter { span.contains($0.key) }.values
      let times = [opening] + shownIntact.map { min(max($0, opening), closing) }.sorted() + [closing]
      for (before, after) in zip(times, times.dropFirst()) {
        let freeze = before.duration(to: after)
        longest = max(longest, freeze)
        if freeze > freezeThreshold { over += 1 }
      }
    }
    return Verdict(
      window: window, framesSent: sent.count, framesShown: shown.count, framesIntact: intact.count, delay: delay,
      longestFreeze: longest, freezeThreshold: freezeThreshold, freezesOverThreshold: over, leftOut: gap)
  }
}

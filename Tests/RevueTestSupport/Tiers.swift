import Foundation
import Testing

/// The tiers of the suite (issue 27), by what a test costs and what it needs. Every suite
/// carries its tier (`@Suite(.tier(.pipeline), …)`); a suite whose tests differ carries none and
/// each of its tests carries its own, since a suite's condition holds for all its tests.
///
/// `swift test` runs every tier. `REVUE_TEST_TIERS` (a comma-separated list) runs some:
/// `REVUE_TEST_TIERS=unit,pipeline swift test` for the tiers that take seconds in all, and `smoke`
/// adds the realtime and interop tests marked as the short proof of their family (the sanitizer
/// run takes `unit,pipeline,smoke`). Swift 6.3's `swift test --filter` does not read tags
/// (`--filter tag:` comes with a later toolchain), hence a condition rather than a tag.
public enum TestTier: String, Sendable, CaseIterable {
  /// Pure logic, no pipeline and no wire: controllers, SDP, options, tables. Milliseconds each.
  case unit
  /// Real pipelines on this machine and loopback sockets, a few seconds at most each.
  case pipeline
  /// Behaviour over real time: link trials, floods, soaks, congestion runs. Tens of seconds.
  case realtime
  /// Against software the team did not write: ffmpeg, VLC, Janus, aiortc, Chromium.
  case interop

  /// The tiers `REVUE_TEST_TIERS` names (`smoke` among them), nil when it is not set: every tier.
  static let selected: Set<String>? = ProcessInfo.processInfo.environment["REVUE_TEST_TIERS"].map {
    Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
  }

  /// Whether a test of this tier runs, marked `smoke` or not.
  func runs(smoke: Bool) -> Bool {
    guard let selected = Self.selected else { return true }
    return selected.contains(rawValue) || (smoke && selected.contains("smoke"))
  }
}

extension Trait where Self == ConditionTrait {
  /// Runs the test or suite when its tier is selected (``TestTier``); `smoke` marks a realtime
  /// or interop test that also runs when `smoke` is.
  public static func tier(_ tier: TestTier, smoke: Bool = false) -> Self {
    .enabled(
      if: tier.runs(smoke: smoke),
      Comment(
        rawValue:
          "the \(tier.rawValue) tier is not in REVUE_TEST_TIERS=\(TestTier.selected?.sorted().joined(separator: ",") ?? "")"
      ))
  }
}

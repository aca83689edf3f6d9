import Foundation
import Glibc
import RevueCommandLine
import RevueSDK

/// `revue-bench`: the SDK's work measured side by side with the same GStreamer elements driven
/// by `gst-launch-1.0`, in the same run, alternating A/B so that machine noise hits both. Each
/// side runs in a child process of its own, whose CPU time and peak memory come from `wait4`.
struct BenchCommand: Equatable {
  /// The scenarios to run (all when empty).
  var scenarios: [Scenario]
  /// Frames per run; nil for each scenario's default (``defaultFrames(_:)``).
  var frames: Int?
  /// Runs of each side (latency and scale run once: they are many samples or a search already).
  var runs: Int
  /// Where to write the report as JSON, if anywhere.
  var jsonPath: String?
  /// Where to write the report as a Markdown table, if anywhere.
  var markdownPath: String?
  /// How long the soak runs, in minutes; nil for 10.
  var minutes: Int? = nil

  /// Frames per run of a scenario: 300 for buffer capture and each loss trial of the links,
  /// 90 (3 s) for live sending and receiving, 240 (8 s) for latency, 150 (5 s, and 10 s) for
  /// rendering.
  static func defaultFrames(_ kind: Kind) -> Int {
    switch kind {
    case .capture, .links: 300
    case .latency: 240
    case .render: 150
    default: 90
    }
  }

  /// The frames per run of `kind` with this command's options (at least what warm-up needs).
  func frameCount(_ kind: Kind) -> Int {
    if case .soak = kind { return (minutes ?? 10) * 60 * 30 }  // the frames of the whole soak at 30 fps
    guard let frames else { return Self.defaultFrames(kind) }
    switch kind {
    case .send, .receive: return max(frames, Self.warmup + 5)
    case .latency: return max(frames, 40)
    default: return frames
    }
  }

  /// Runs every scenario, prints the table and writes the reports.
  func run() async throws {
    #if DEBUG
      FileHandle.standardError.write(
        Data("revue-bench: this is a debug build; run `swift run -c release revue-bench` for real numbers\n".utf8))
    #endif
    // The links run alone (the parser allows nothing beside them): a report of their own.
    if scenarios == [.links] { return try await links() }
    signal(SIGPIPE, SIG_IGN)  // a gst-launch child that fails must not end the bench while it writes to it
    let started = monotonicNanoseconds()
    var table: [ReportRow] = []
    let idle = try await idleMemory()
    print("memory of an idle process: \(Self.idleMemoryText(idle))")
    print(ReportRow.header)
    for scenario in scenarios.isEmpty ? Scenario.standard : scenarios {
      var results: [Side: [[Metric: Double]]] = [:]
      let repeats: Int
      switch scenario.kind {
      case .latency, .scale, .soak, .sessions: repeats = 1
      default: repeats = runs
      }
      for _ in 0..<repeats {
        if case .soak(let stream) = scenario.kind {
          // Both pairs at once, beside each other: ten minutes of machine noise hit both.
          for (side, metrics) in try await soak(stream) { results[side, default: []].append(metrics) }
          continue
        }
        if case .sessions = scenario.kind {
          for (side, metrics) in try await sessions() { results[side, default: []].append(metrics) }
          continue
        }
        for side in [Side.revue, .gstLaunch] {
          results[side, default: []].append(try await measure(scenario.kind, side))
        }
      }
      let median = { (side: Side, metric: Metric) in results[side]?.compactMap { $0[metric] }.median }
      let rows = ReportRow.rows(for: scenario, frames: frameCount(scenario.kind), idle: idle) { median($0, $1) }
      for row in rows { print(row.line) }
      table += rows
    }
    let seconds = Double(monotonicNanoseconds() - started) / 1e9
    print(String(format: "bench: %.0f s", seconds))
    if let markdownPath {
      try markdown(table, idle: idle, seconds: seconds).write(toFile: markdownPath, atomically: true, encoding: .utf8)
    }
    if let jsonPath {
      let idleJSON = idle.mapValues { memory -> [String: Double] in
        ["resident": memory[.rss] ?? 0, "private": memory[.privateMemory] ?? 0]
      }
      let report: [String: Any] = [
        "runs": runs, "seconds": seconds, "results": table.map(\.json),
        "idleMemoryMiB": ["revue": idleJSON[.revue] ?? [:], "gstLaunch": idleJSON[.gstLaunch] ?? [:]],
      ]
      let data = try JSONSerialization.data(withJSONObject: report, options: [.prettyPrinted, .sortedKeys])
      try data.write(to: URL(fileURLWithPath: jsonPath))
    }
  }
}

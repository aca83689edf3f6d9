import Foundation
import Glibc
import RevueSDK

/// The report: its rows, their targets, the Markdown.
extension BenchCommand {
  /// A target a row is held to.
  enum Target: Sendable {
    /// No target: information.
    case none
    /// Revue / gst-launch at most this (CPU, memory).
    case ratioAtMost(Double)
    /// Revue / gst-launch at least this (frame rates, frames, senders).
    case ratioAtLeast(Double)
    /// Revue − gst-launch at most this (latency, ms).
    case differenceAtMost(Double)
    /// Revue exactly this (bytes copied, threads added).
    case equals(Double)
    /// Revue below this (growth, %).
    case below(Double)
    /// Revue at most this (format conversions).
    case atMost(Double)
  }

  /// One line of the report.
  struct ReportRow {
    var scenario: String
    var measure: String
    var revue: Double?
    var gstLaunch: Double?
    var unit: String
    var digits: Int
    var target: Target = .none

    /// Revue / gst-launch, when both are known.
    var ratio: Double? {
      guard let revue, let gstLaunch, gstLaunch != 0 else { return nil }
      return revue / gstLaunch
    }

    /// The target and whether it is met: `≤ 1.05: met`, `≤ 1.05: MISSED`, or empty.
    var verdict: String {
      switch target {
      case .none: return ""
      case .ratioAtMost(let limit):
        guard let ratio else { return "ratio ≤ \(limit): not measured" }
        return "ratio ≤ \(limit): \(ratio <= limit ? "met" : "MISSED")"
      case .ratioAtLeast(let limit):
        guard let ratio else { return "ratio ≥ \(limit): not measured" }
        return "ratio ≥ \(limit): \(ratio >= limit ? "met" : "MISSED")"
      case .differenceAtMost(let limit):
        guard let revue, let gstLaunch else { return "within \(format(limit)) ms: not measured" }
        let difference = revue - gstLaunch
        return
          "within \(format(limit)) ms (\(String(format: "%+.1f", difference))): \(difference <= limit ? "met" : "MISSED")"
      case .equals(let value):
        guard let revue else { return "\(format(value)): not measured" }
        return "\(format(value)): \(revue == value ? "met" : "MISSED")"
      case .below(let limit):
        guard let revue else { return "< \(format(limit)): not measured" }
        return "< \(format(limit)): \(revue < limit ? "met" : "MISSED")"
      case .atMost(let limit):
        guard let revue else { return "≤ \(format(limit)): not measured" }
        return "≤ \(format(limit)): \(revue <= limit ? "met" : "MISSED")"
      }
    }

    /// Whether the row has a target it misses.
    var isMissed: Bool { verdict.hasSuffix("MISSED") }

    /// A number with the row's digits, or a dash.
    func format(_ value: Double?) -> String {
      value.map { String(format: "%.\(digits)f", $0) } ?? "—"
    }

    /// The terminal table's header.
    static let header =
      "scenario".padding(toLength: 40, withPad: " ", startingAt: 0) + " "
      + "measure".padding(toLength: 29, withPad: " ", startingAt: 0)
      + "      Revue  gst-launch  ratio  unit / target"

    /// The row for the terminal.
    var line: String {
      scenario.padding(toLength: 40, withPad: " ", startingAt: 0) + " "
        + measure.padding(toLength: 29, withPad: " ", startingAt: 0)
        + [format(revue), format(gstLaunch)].map { String(repeating: " ", count: max(0, 11 - $0.count)) + $0 }.joined(
          separator: " ")
        + ratioText + "  \(unit)"
        + (verdict.isEmpty ? "" : "  [\(verdict)]")
    }

    /// The ratio right-aligned in 7 columns.
    private var ratioText: String {
      let text = ratio.map { String(format: "%.2f", $0) } ?? "—"
      return String(repeating: " ", count: max(0, 7 - text.count)) + text
    }

    /// The row for `--json`.
    var json: [String: Any] {
      var object: [String: Any] = ["scenario": scenario, "measure": measure, "unit": unit]
      if let revue { object["revue"] = revue }
      if let gstLaunch { object["gstLaunch"] = gstLaunch }
      if let ratio { object["ratio"] = ratio }
      if !verdict.isEmpty { object["target"] = verdict }
      return object
    }

    /// The rows of a scenario from the medians of its runs (`median(side, metric)`). `idle` is
    /// the memory of an idle process of each side, for the memory the work itself holds.
    static func rows(
      for scenario: Scenario, frames: Int, idle: [Side: [Metric: Double]], median: (Side, Metric) -> Double?
    ) -> [ReportRow] {
      let title = scenario.title
      /// A row of `metric`'s medians on both sides.
      func row(_ measure: String, _ metric: Metric, _ unit: String, digits: Int, target: Target = .none) -> ReportRow {
        ReportRow(
          scenario: title, measure: measure, revue: median(.revue, metric), gstLaunch: median(.gstLaunch, metric),
          unit: unit, digits: digits, target: target)
      }
      /// The conversions row of a send: at most one between the source and the encoder, none
      /// where the source's format is one the encoder takes (MJPEG's I420, NV12 to H.264).
      func conversions(_ stream: BenchStream) -> ReportRow {
        let none = stream.source == .mjpegCamera || (stream.codec == .h264 && stream.source != .pushedBGRA)
        return row(
          "format conversions", .conversions, "videoconvert elements converting (passthrough not counted)",
          digits: 0, target: none ? .equals(0) : .atMost(1))
      }
      let privateMemory = row(
        "peak private memory", .privateMemory, "MiB (heap, stacks, frames)", digits: 1, target: .ratioAtMost(1.05))
      var work = privateMemory
      work.measure = "private memory above idle"
      work.unit = "MiB (what the work holds)"
      work.revue = privateMemory.revue.flatMap { value in idle[.revue]?[.privateMemory].map { value - $0 } }
      work.gstLaunch = privateMemory.gstLaunch.flatMap { value in idle[.gstLaunch]?[.privateMemory].map { value - $0 } }
      let memory = [
        row(
          "peak resident memory", .rss, "MiB (shared libraries' pages included)", digits: 1, target: .ratioAtMost(1.05)),
        privateMemory, work,
      ]
      switch scenario.kind {
      case .capture(let format, let rotation):
        return [
          row("frames per second", .fps, "fps (higher is better)", digits: 0),
          row("CPU per frame", .cpuPerFrame, "µs", digits: 1, target: .ratioAtMost(1.05)),
          row(
            "bytes copied per frame", .copied, "bytes (to the renderer)", digits: 0,
            target: format == .nv12 && rotation == ._0 ? .equals(0) : .none),
        ]
          + memory
      case .send(let stream) where stream.source.pushedFormat != nil:
        return [
          row("CPU per frame", .cpuPerFrame, "µs", digits: 0, target: .ratioAtMost(1.05)),
          row("frames per second kept", .fps, "fps on the wire", digits: 1, target: .ratioAtLeast(0.95)),
          row(
            "bytes copied to the encoder", .copiedToEncoder,
            stream.source == .pushedBGRA ? "bytes per frame (after the conversion to NV12)" : "bytes per frame",
            digits: 0, target: .equals(0)),
          conversions(stream),
        ] + memory
      case .send(let stream):
        return [
          row("CPU per second of video", .cpu, "CPU s/s", digits: 3, target: .ratioAtMost(1.05)),
          row("frames per second kept", .fps, "fps on the wire", digits: 1, target: .ratioAtLeast(0.95)),
          conversions(stream),
        ] + memory
      case .receive:
        return [
          row("CPU per second of video", .cpu, "CPU s/s", digits: 3, target: .ratioAtMost(1.05)),
          row("frames decoded", .frames, "of \(frames) sent", digits: 0, target: .ratioAtLeast(0.95)),
        ] + memory
      case .latency:
        return [
          row("p50", .p50, "ms", digits: 1, target: .differenceAtMost(2)),
          row("p95", .p95, "ms", digits: 1),
          row("frames lost", .lost, "of \(frames - 30)", digits: 0),
        ]
      case .startup:
        return [
          row("spawn → first RTP packet", .spawnToPacket, "ms (process start included)", digits: 0),
          row("spawn → first decoded frame", .spawnToFrame, "ms (process start included)", digits: 0),
          row(
            "publish → first RTP packet", .publishToPacket, "ms (camera switch's 100 ms debounce included)", digits: 0),
          row("publish → first decoded frame", .publishToFrame, "ms (at a Revue receiver)", digits: 0),
        ]
      case .scale:
        return [row("senders sustained", .senders, "senders at ≥ 28.5 fps", digits: 0, target: .ratioAtLeast(1))]
      case .render:
        return [
          row("CPU per frame", .cpuPerFrame, "µs (a frame shown)", digits: 0, target: .ratioAtMost(1.10)),
          row(
            "bytes copied per frame", .copied, "bytes (before the sink's conversion to RGB)", digits: 0,
            target: .equals(0)),
        ] + memory
      case .links:
        return []
      case .soak:
        return Soak.Role.allCases.flatMap { role in
          soakRows(title: "\(title) \(role.rawValue)", role: role, frames: frames, row: row)
        }
      case .sessions:
        return Sessions.Client.allCases.flatMap { client in
          var rows = [
            row("resident after 40", .sessions(client, .residentSettled), "MiB", digits: 1, target: .none),
            row("resident after 200", .sessions(client, .residentEnd), "MiB", digits: 1, target: .none),
            row("resident growth after 40", .sessions(client, .residentGrowth), "MiB", digits: 1, target: .below(5)),
            // Fewer is as good as none: GLib's idle threads end after 15 s.
            row("threads added after 40", .sessions(client, .threadsAdded), "threads", digits: 0, target: .below(1)),
            row(
              "open fds added after 40", .sessions(client, .descriptorsAdded), "file descriptors", digits: 0,
              target: .below(1)),
            row("sessions failed", .sessions(client, .failed), "of 200", digits: 0, target: .equals(0)),
          ]
          for index in rows.indices { rows[index].scenario = "\(title) \(client.title)" }
          return rows
        }
      }
    }

    /// The rows of one process of the soak: its memory at the start, after the warm-up and at the
    /// end; what it gained after the warm-up (the target: under 1 % of resident memory, no thread
    /// and no file descriptor); the receiver's frames decoded.
    private static func soakRows(
      title: String, role: Soak.Role, frames: Int,
      row: (String, Metric, String, Int, Target) -> ReportRow
    ) -> [ReportRow] {
      var rows = [
        row("resident at start", .soak(role, .residentStart), "MiB (1 s after the senders started)", 1, .none),
        row("resident at warm-up", .soak(role, .residentWarm), "MiB (at 30 s)", 1, .none),
        row("resident at end", .soak(role, .residentEnd), "MiB", 1, .none),
        row("resident growth since warm-up", .soak(role, .residentGrowth), "KiB", 0, .none),
        row("resident growth, % of warm-up", .soak(role, .residentGrowthPercent), "%", 2, .below(1)),
        row("private growth since warm-up", .soak(role, .privateGrowth), "KiB (RssAnon)", 0, .none),
        row("largest step since warm-up", .soak(role, .largestStep), "KiB in 1 s (one step is not a slope)", 0, .none),
        row("threads at warm-up", .soak(role, .threadsWarm), "threads", 0, .none),
        row("threads added since warm-up", .soak(role, .threadsAdded), "threads", 0, .equals(0)),
        row("open fds at warm-up", .soak(role, .descriptorsWarm), "file descriptors", 0, .none),
        row("open fds added since warm-up", .soak(role, .descriptorsAdded), "file descriptors", 0, .equals(0)),
      ]
      if role == .receiver {
        rows.append(row("frames decoded", .frames, "of \(frames) sent at 30 fps", 0, .ratioAtLeast(0.95)))
      }
      for index in rows.indices { rows[index].scenario = title }
      return rows
    }
  }

  /// The machine: CPU, cores, memory, kernel, GStreamer.
  static var machine: String {
    let cpu =
      (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n")
      .first { $0.hasPrefix("model name") }.map {
        $0.split(separator: ":", maxSplits: 1).last!.trimmingCharacters(in: .whitespaces)
      }
      ?? "unknown CPU"
    var name = utsname()
    uname(&name)
    let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let memory = ProcessInfo.processInfo.physicalMemory / (1 << 30)
    return "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(memory) GiB, Linux \(kernel), "
      + "GStreamer \(NodeElements.gstreamerVersion)"
  }

  /// Where the bench is and how it runs, for the report.
  static let whereItLives =
    "The bench is `revue-bench` (`Sources/revue-bench`), a program of its own beside the node `revue`: "
    + "`swift run -c release revue-bench [SCENARIO ...]`, or `.build/release/revue-bench` after "
    + "`swift build -c release`; `revue-bench --help` lists the scenarios and options."

  /// Both sides' idle memory: `Revue 24.6 MiB resident, 2.3 MiB private; gst-launch …`.
  static func idleMemoryText(_ idle: [Side: [Metric: Double]]) -> String {
    [Side.revue, .gstLaunch].map { side in
      String(
        format: "\(side.rawValue) %.1f MiB resident, %.1f MiB private", idle[side]?[.rss] ?? 0,
        idle[side]?[.privateMemory] ?? 0)
    }.joined(separator: "; ")
  }

  /// The report as Markdown: how it was made, the machine, the table, what each number
  /// includes, and the targets missed.
  func markdown(_ rows: [ReportRow], idle: [Side: [Metric: Double]], seconds: Double) -> String {
    var command = "swift run -c release revue-bench"
    if !scenarios.isEmpty { command += " " + scenarios.map(\.rawValue).joined(separator: " ") }
    if runs != 3 { command += " --runs \(runs)" }
    if let frames { command += " --frames \(frames)" }
    if let minutes { command += " --minutes \(minutes)" }
    var lines = [
      "# Benchmarks", "",
      "Made by `\(command) --markdown \(markdownPath ?? "FILE")` in \(String(format: "%.0f", seconds)) s, "
        + "on \(ISO8601DateFormatter().string(from: Date())).", "",
      Self.whereItLives, "",
      "Machine: \(Self.machine).", "",
      "Each scenario runs Revue and the same GStreamer elements with the same properties in `gst-launch-1.0`, "
        + "alternately (Revue, gst-launch, Revue, …), each side in a process of its own; the table gives the "
        + "median of \(runs) runs of each side (latency and scale: one run of many samples; soak: one run of "
        + "both pairs at once). "
        + "Ratio is Revue / gst-launch.", "",
      "Memory of an idle process (GStreamer initialized; Revue: a `Room` made, gst-launch: `fakesrc ! fakesink`), "
        + "peak: \(Self.idleMemoryText(idle)).", "",
      "| scenario | measure | Revue | gst-launch | ratio | unit | target |", "|---|---|---:|---:|---:|---|---|",
    ]
    for row in rows {
      let ratio = row.ratio.map { String(format: "%.2f", $0) } ?? "—"
      lines.append(
        "| \(row.scenario) | \(row.measure) | \(row.format(row.revue)) | \(row.format(row.gstLaunch)) | \(ratio) "
          + "| \(row.unit) | \(row.verdict.isEmpty ? "—" : row.verdict) |")
    }
    lines += ["", Self.notes, Self.closing]
    let missed = rows.filter(\.isMissed)
    lines += ["", "## Targets missed", ""]
    if missed.isEmpty {
      lines.append("None in this run.")
    } else {
      // One line per reason, naming the rows it explains.
      var reasons: [(why: String, rows: [ReportRow])] = []
      for row in missed {
        let why = Self.why(row)
        if let index = reasons.firstIndex(where: { $0.why == why }) {
          reasons[index].rows.append(row)
        } else {
          reasons.append((why, [row]))
        }
      }
      for (why, rows) in reasons {
        let named = rows.map { "\($0.scenario) (\($0.format($0.revue)) vs \($0.format($0.gstLaunch)))" }
        lines.append("- **\(rows[0].measure)**: \(named.joined(separator: "; ")). \(why)")
      }
    }
    return lines.joined(separator: "\n") + "\n"
  }
}

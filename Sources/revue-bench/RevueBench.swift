import CMalloc
import Foundation
import RevueCommandLine

/// `revue-bench`: the SDK measured against gst-launch (``BenchCommand``), and the Revue side of
/// a scenario when the bench runs itself as a child (``BenchChild``).
@main
enum RevueBench {
  static func main() async {
    // Its children (the Revue side of each scenario) hold malloc to one arena as the node does
    // (Sources/CMalloc/arenas.c), so that the memory measured is the node's.
    _ = revue_malloc_arenas()
    await BenchInvocation.main()
  }
}

/// A parsed `revue-bench` command line.
enum BenchInvocation: Equatable, ProgramCommand {
  /// `revue-bench [SCENARIO ...] [--frames N] [--runs N] [--minutes N] [--json FILE] [--markdown FILE]`.
  case bench(BenchCommand)
  /// `revue-bench --child KIND KEY=VALUE …` (not in the help): the Revue side of a scenario, run
  /// by the bench in a process of its own.
  case child(BenchChild)
  /// `revue-bench help`, `--help` or `-h`.
  case help

  static let programName = "revue-bench"

  /// The help text.
  static let usage = """
    usage: revue-bench [SCENARIO ...] [--frames N] [--runs N] [--minutes N] [--json FILE] [--markdown FILE]

    Measures the SDK against the same GStreamer elements run by gst-launch-1.0, each side in a
    process of its own (build with -c release; all scenarios but soak take about 7 minutes).

    scenarios (all but soak, sessions and links when none is named):
      capture-nv12 capture-bgra capture-rotate90 publish-nv12 publish-bgra
      send-vp8-720p send-h264-720p send-vp8-480p send-h264-480p
      send-vp8-720p-mjpeg send-h264-720p-mjpeg
      receive-vp8-720p receive-h264-720p receive-vp8-480p receive-h264-480p
      latency-vp8-720p latency-h264-720p startup-vp8-720p startup-h264-720p
      scale-vp8-480p render-1080p (a VideoView window; on an Xvfb of its own with no display)
      soak (run only when named: revue stream and revue receive of 720p VP8 beside gst-launch's
        pair, memory, threads and file descriptors after a 30 s warm-up; the revue beside this
        program)
      sessions (run only when named: revue serve --rtsp --webrtc and 200 clients one after
        another of each, ffprobe over RTSP then revue receive --whep; the node's memory,
        threads and file descriptors after the 200th against after the 40th; about 10 minutes)
      links (run only when named, and alone: loss 0, 5% and 10% both ways at 30 ± 10 ms
        × VP8, H.264 × 640x480, 1280x720 × recovery nack, off (and FEC at 640x480), then a 5 s
        outage, then hostile input: each of the 12 cases alone and all at once, 500 datagrams
        a second to the receiver beside VP8 640x480 through 2% loss with NACK, 180 frames
        each (13 trials of about 7 s); frames intact and longest freeze judged against a
        lossless reference receiver; about 8 minutes; --markdown writes docs/loss-recovery.md)

    options:
      --frames N       frames per run (default: 300 capture, 90 send/receive, 240 latency,
                       300 each links loss trial; the hostile-input trials keep 180)
      --runs N         runs of each side, their median reported (default: 3)
      --minutes N      how long the soak runs (default: 10)
      --json FILE      write the report as JSON
      --markdown FILE  write the report as Markdown (docs/benchmarks.md)
      --help, help     show this text
    """

  /// Parses the arguments after the program name.
  /// - Throws: ``UsageError`` naming the unknown scenario or option.
  static func parse(_ arguments: [String]) throws(UsageError) -> BenchInvocation {
    if arguments.first == "--child" { return .child(BenchChild(arguments: Array(arguments.dropFirst()))) }
    if arguments.first == "help" { return .help }
    var reader = OptionReader(command: nil, arguments)
    var command = BenchCommand(scenarios: [], runs: 3)
    while let option = reader.next() {
      switch option {
      case "--frames": command.frames = try reader.count(option)
      case "--runs": command.runs = try reader.count(option)
      case "--minutes": command.minutes = try reader.count(option)
      case "--json": command.jsonPath = try reader.value(option)
      case "--markdown": command.markdownPath = try reader.value(option)
      case "--help", "-h": return .help
      default:
        guard let scenario = BenchCommand.Scenario(rawValue: option) else {
          guard !option.hasPrefix("-") else { throw reader.unknown(option) }
          let known = BenchCommand.Scenario.allCases.map(\.rawValue).joined(separator: ", ")
          throw reader.error("unknown scenario '\(option)' (known: \(known))")
        }
        command.scenarios.append(scenario)
      }
    }
    if command.scenarios.contains(.links) && command.scenarios.count > 1 {
      throw reader.error("links runs alone (its report is not an A/B table)")
    }
    return .bench(command)
  }

  /// Runs the command.
  func run() async throws {
    switch self {
    case .help: print(Self.usage)
    case .bench(let command): try await command.run()
    case .child(let child): try await child.run()
    }
  }
}

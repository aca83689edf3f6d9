import Foundation
import Glibc
import RevueCommandLine
import RevueProcess

/// Milliseconds between two monotonic stamps (``monotonicNanoseconds()``: the bench stamps
/// events in its children and in itself with it).
func milliseconds(from start: UInt64, to end: UInt64) -> Double { (Double(end) - Double(start)) / 1e6 }

extension ChildProcess.Stopping {
  /// How the bench stops a child: its standard input closed (a Revue child, which ignores
  /// SIGINT, stops then) and SIGINT (gst-launch stops its pipeline, and writes what it holds);
  /// one still there 5 s later is killed.
  static let bench = Self(signal: SIGINT, grace: 5)
}

/// The children of the bench: each reaped by the bench itself, so that its CPU time and peak
/// memory are its own and never mixed with another child's.
extension ChildProcess {
  /// Starts `executable` as a child of the bench: its standard input a pipe of the bench's
  /// (raw frames, or closed to stop it), its peak memory tracked, stopped as ``Stopping/bench``.
  convenience init(
    bench executable: String, _ arguments: [String], output: Output = .discard, environment: [String: String?] = [:]
  ) throws {
    try self.init(
      URL(fileURLWithPath: executable), arguments, environment: environment, input: .pipe, output: output,
      stopping: .bench, tracksPeakMemory: true)
  }

  /// Starts `gst-launch-1.0` with a pipeline description (split at spaces).
  static func gstLaunch(_ description: String, verbose: Bool = false, output: Output = .discard) throws
    -> ChildProcess
  {
    try ChildProcess(
      bench: "/usr/bin/gst-launch-1.0", [verbose ? "-v" : "-q"] + description.split(separator: " ").map(String.init),
      output: output)
  }

  /// Starts a command of the node (`revue stream …`, `revue receive …`: the `revue` beside this
  /// program) in the bench's environment without `GST_TRACERS` (a leaks tracer set for the tests
  /// would count every object of the child, and be measured with it).
  static func revueCommand(_ arguments: [String]) throws -> ChildProcess {
    try ChildProcess(
      bench: ChildProcess.executable(named: "revue").path, arguments, environment: ["GST_TRACERS": nil])
  }

  /// Starts the Revue side of a scenario: `revue-bench --child KIND KEY=VALUE …` (the
  /// `revue-bench` beside this program: this one, or the one beside the tests).
  static func revue(
    _ kind: String, _ parameters: [String: String], output: Output = .collect, environment: [String: String?] = [:]
  ) throws -> ChildProcess {
    try ChildProcess(
      bench: ChildProcess.executable(named: "revue-bench").path,
      ["--child", kind] + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" },
      output: output, environment: environment)
  }
}

extension ChildProcess.Exit {
  /// The `KEY=VALUE` lines of the standard output collected (a bench child's results), in order.
  var results: [(key: String, value: String)] {
    output.split(separator: "\n").compactMap { line in
      let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
      return parts.count == 2 ? (parts[0], parts[1]) : nil
    }
  }
}

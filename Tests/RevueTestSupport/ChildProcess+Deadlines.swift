import Foundation
import RevueProcess
import Testing

/// The waits of a test on a program it runs (``ChildProcess``, the runner the bench uses too),
/// as test failures: at a deadline the program is stopped (SIGTERM, then SIGKILL) and
/// ``DeadlineExceeded`` names what was awaited, where, and quotes the end of what the program
/// wrote to standard error.
extension ChildProcess {
  /// Runs a program to its end within `seconds` (see ``exit(within:sourceLocation:)``).
  public static func run(
    _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], within seconds: Double,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Exit {
    try await ChildProcess(executable, arguments, environment: environment)
      .exit(within: seconds, sourceLocation: sourceLocation)
  }

  /// Waits until the program has exited and closed its output. At the deadline it is stopped
  /// and ``DeadlineExceeded`` names it and quotes its standard error.
  public func exit(within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Exit {
    let exit = await wait(stoppingAfter: seconds)
    try Task.checkCancellation()
    if exit.timedOut {
      throw DeadlineExceeded(
        "waited \(seconds) s for `\(command)` to exit (\(sourceLocation.fileName):\(sourceLocation.line)); ended it;"
          + " its standard error:\n\(Self.tail(exit.error))")
    }
    return exit
  }

  /// Waits until the program's standard error contains `text`. Throws when it exits without
  /// writing it, and at the deadline (stopping it), quoting its standard error.
  public func waitForError(
    containing text: String, within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    try await wait(within: seconds, to: ("write", "writing"), "\"\(text)\"", sourceLocation: sourceLocation) {
      $0.error.contains(text)
    }
  }

  /// Waits until the program's standard output contains `text`, and returns what it wrote there
  /// so far. Throws when it exits without writing it, and at the deadline (stopping it), quoting
  /// its standard error.
  @discardableResult
  public func waitForOutput(
    containing text: String, within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> String {
    try await waitForOutput(within: seconds, for: "\"\(text)\"", sourceLocation: sourceLocation) { $0.contains(text) }
  }

  /// Waits until what the program wrote to standard output so far satisfies `condition`, and
  /// returns it. Throws when it exits first, and at the deadline (stopping it), quoting its
  /// standard error.
  @discardableResult
  public func waitForOutput(
    within seconds: Double, for what: String, sourceLocation: SourceLocation = #_sourceLocation,
    until condition: @escaping @Sendable (String) -> Bool
  ) async throws -> String {
    try await wait(within: seconds, to: ("print", "printing"), what, sourceLocation: sourceLocation) {
      condition($0.output)
    }
    return written.output
  }

  /// Waits until what the program wrote satisfies `condition`; the failures say it was to
  /// `verb` (`write`, `print`; and `writing`, `printing`) `what`.
  private func wait(
    within seconds: Double, to verb: (String, String), _ what: String, sourceLocation: SourceLocation,
    until condition: @escaping @Sendable (Written) -> Bool
  ) async throws {
    let place = "(\(sourceLocation.fileName):\(sourceLocation.line))"
    switch await wait(within: seconds, until: condition) {
    case .satisfied:
      return
    case .ended:
      let exit = await wait()
      throw DeadlineExceeded(
        "`\(command)` exited (status \(exit.status)) without \(verb.1) \(what) \(place); its standard error:\n"
          + Self.tail(exit.error))
    case .timedOut:
      try Task.checkCancellation()
      let exit = await stop()
      throw DeadlineExceeded(
        "waited \(seconds) s for `\(command)` to \(verb.0) \(what) \(place); ended it; its standard error:\n"
          + Self.tail(exit.error))
    }
  }

  /// The last lines of a program's standard error, enough to say why it failed.
  private static func tail(_ text: String) -> String {
    guard !text.isEmpty else { return "(nothing)" }
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    return (lines.count > 40 ? ["…"] + lines.suffix(40) : lines[...]).joined(separator: "\n")
  }
}

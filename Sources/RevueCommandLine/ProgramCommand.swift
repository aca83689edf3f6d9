import Foundation

/// A command line that does not parse: what is wrong, in one line.
public struct UsageError: Error, CustomStringConvertible, Equatable {
  /// What is wrong, naming the option or command.
  public var description: String

  /// A usage error that says `description`.
  public init(description: String) { self.description = description }
}

/// The exit codes of Revue's programs.
public enum ExitCode: Int32, Sendable {
  /// It worked.
  case success = 0
  /// Something failed at run time.
  case failure = 1
  /// The command line was wrong.
  case usage = 2
}

/// The parsed command line of one of Revue's programs (`revue`, `revue-bench`): how it is
/// parsed, what it runs, and how the program reports what goes wrong.
public protocol ProgramCommand {
  /// The program's name, which starts its error messages (`revue: unknown command 'fly'`).
  static var programName: String { get }
  /// The help text, printed after a usage error.
  static var usage: String { get }
  /// Parses the arguments after the program name.
  /// - Throws: ``UsageError`` naming what is wrong.
  static func parse(_ arguments: [String]) throws(UsageError) -> Self
  /// Runs the command.
  func run() async throws
}

extension ProgramCommand {
  /// Parses and runs `arguments` (without the program name): a usage error is printed to
  /// standard error with the help (``ExitCode/usage``), a failure in one line
  /// (``ExitCode/failure``).
  public static func run(_ arguments: [String]) async -> ExitCode {
    let command: Self
    do {
      command = try parse(arguments)
    } catch {
      FileHandle.standardError.write(Data("\(programName): \(error)\n\(usage)\n".utf8))
      return .usage
    }
    do {
      try await command.run()
      return .success
    } catch {
      FileHandle.standardError.write(Data("\(programName): \(error)\n".utf8))
      return .failure
    }
  }

  /// The program's entry point: runs the process's arguments and exits with their code.
  public static func main() async -> Never {
    exit(await run(Array(CommandLine.arguments.dropFirst())).rawValue)
  }
}

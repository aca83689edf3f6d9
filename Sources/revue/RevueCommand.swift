import Foundation
import RevueSDK

/// The `revue` media node: the entry point parses the command line and runs one subcommand.
@main
struct RevueCommand {
  static func main() async {
    let arguments = Array(CommandLine.arguments.dropFirst())
    let code = await run(arguments)
    exit(code.rawValue)
  }

  /// Runs `revue` with `arguments` (without the program name), printing to stdout and stderr.
  static func run(_ arguments: [String]) async -> ExitCode {
    let command: Command
    do {
      command = try Command.parse(arguments)
    } catch {
      FileHandle.standardError.write(Data("revue: \(error)\n\(Command.usage)\n".utf8))
      return .usage
    }
    do {
      try await command.run()
      return .success
    } catch {
      FileHandle.standardError.write(Data("revue: \(error)\n".utf8))
      return .failure
    }
  }
}

/// The exit codes of `revue`.
enum ExitCode: Int32 {
  /// It worked.
  case success = 0
  /// Something failed at run time.
  case failure = 1
  /// The command line was wrong.
  case usage = 2
}

/// A command line that does not parse: what is wrong, in one line.
struct UsageError: Error, CustomStringConvertible, Equatable {
  var description: String
}

/// A parsed `revue` command line.
enum Command: Equatable {
  /// `revue check [--json]`: GStreamer's version, the elements the node uses, and a test pipeline.
  case check(json: Bool)
  /// `revue help` or `--help`.
  case help

  /// The help text.
  static let usage = """
    usage: revue <command> [options]

    commands:
      check [--json]   report GStreamer's version and the plugins the node uses, present or missing,
                       and run a test pipeline (test pattern, VP8 encode and decode)
      help             show this text
    """

  /// Parses the arguments after the program name.
  /// - Throws: ``UsageError`` naming the unknown command or option.
  static func parse(_ arguments: [String]) throws(UsageError) -> Command {
    guard let name = arguments.first else { return .check(json: false) }
    let options = Array(arguments.dropFirst())
    switch name {
    case "help", "--help", "-h":
      return .help
    case "check":
      var json = false
      for option in options {
        switch option {
        case "--json": json = true
        case "--help", "-h": return .help
        default: throw UsageError(description: "check: unknown option '\(option)'")
        }
      }
      return .check(json: json)
    default:
      throw UsageError(description: "unknown command '\(name)'")
    }
  }

  /// Runs the command.
  func run() async throws {
    switch self {
    case .help: print(Command.usage)
    case .check(let json): try await CheckCommand(json: json).run()
    }
  }
}

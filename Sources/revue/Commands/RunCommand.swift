import Foundation
import RevueCommandLine
import RevueSDK

/// `revue run FILE.pipeline [-D KEY=VALUE ...] [--duration S]`: a gst-launch-style config, checked
/// before it starts, run until end of stream, an error, the duration, or Ctrl-C (which ends it
/// with end of stream, so files are finished properly).
struct RunCommand: Equatable {
  var path: String
  var variables: [String: String]
  var duration: Int?

  static func parse(_ arguments: [String]) throws(UsageError) -> RunCommand? {
    var reader = OptionReader(command: "run", arguments)
    var path: String?
    var variables: [String: String] = [:]
    var duration: Int?
    while let option = reader.next() {
      switch option {
      case "-D":
        let pair = try reader.value(option)
        guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
          throw UsageError(description: "run: -D takes KEY=VALUE, not '\(pair)'")
        }
        variables[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
      case "--duration": duration = try reader.count(option)
      case "--help", "-h": return nil
      default:
        guard !option.hasPrefix("-"), path == nil else { throw reader.unknown(option) }
        path = option
      }
    }
    guard let path else { throw UsageError(description: "run: name a .pipeline file") }
    return RunCommand(path: path, variables: variables, duration: duration)
  }

  func run() async throws {
    let text: String
    do {
      text = try String(contentsOfFile: path, encoding: .utf8)
    } catch {
      throw RevueError(.invalidInput, "cannot read \(path)", underlying: error)
    }
    let run = try PipelineRun(PipelineConfig(text: text, source: path), variables: variables)
    await RunLoopControl.run(duration: duration, done: { run.hasEnded }) {}
    await run.finish()
    if let failure = run.failure { throw RevueError(.gstreamer, failure) }
  }
}

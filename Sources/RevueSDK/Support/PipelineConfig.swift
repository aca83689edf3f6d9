import Foundation

/// A gst-launch-style pipeline config: the description `gst-launch-1.0` takes, spread over lines,
/// with `#` comments and `${NAME}` variables.
public struct PipelineConfig: Sendable, Equatable {
  /// The config's text as written.
  public var text: String
  /// Where it came from, for error messages (a file name, or `<text>`).
  public var source: String

  /// A config that cannot be turned into a pipeline description.
  public struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
    /// Where the config came from.
    public var source: String
    /// The line (from 1) where the problem is.
    public var line: Int
    /// What is wrong.
    public var reason: String
    /// An error at `line` of `source`.
    public init(source: String, line: Int, reason: String) {
      self.source = source
      self.line = line
      self.reason = reason
    }

    /// `source:line: reason`.
    public var description: String { "\(source):\(line): \(reason)" }
  }

  /// A config from its text.
  public init(text: String, source: String = "<text>") {
    self.text = text
    self.source = source
  }

  /// A config shipped with the SDK (under `pipelines/`), such as `selftest`.
  /// - Throws: ``Error`` when no such config is shipped.
  public static func builtIn(_ name: String) throws(Error) -> PipelineConfig {
    guard let url = Bundle.module.url(forResource: name, withExtension: "pipeline", subdirectory: "Pipelines"),
      let text = try? String(contentsOf: url, encoding: .utf8)
    else { throw Error(source: "\(name).pipeline", line: 0, reason: "no built-in pipeline config of that name") }
    return PipelineConfig(text: text, source: "\(name).pipeline")
  }

  /// The pipeline description: comments removed, lines joined, every `${NAME}` replaced.
  /// - Throws: ``Error`` naming the line of a variable with no value or an unterminated `${`.
  public func description(variables: [String: String] = [:]) throws(Error) -> String {
    var parts: [String] = []
    for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      var line = Substring(rawLine)
      if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
      var expanded = ""
      while let start = line.range(of: "${") {
        expanded += line[..<start.lowerBound]
        guard let end = line[start.upperBound...].firstIndex(of: "}") else {
          throw Error(source: source, line: index + 1, reason: "'${' without a closing '}'")
        }
        let name = String(line[start.upperBound..<end])
        guard let value = variables[name] else {
          throw Error(
            source: source, line: index + 1, reason: "variable ${\(name)} has no value (set it with -D \(name)=…)")
        }
        expanded += value
        line = line[line.index(after: end)...]
      }
      expanded += line
      let trimmed = expanded.trimmingCharacters(in: .whitespaces)
      if !trimmed.isEmpty { parts.append(trimmed) }
    }
    return parts.joined(separator: " ")
  }
}

import Foundation
import GStreamer

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
    /// The column (from 1) where the problem starts, when known.
    public var column: Int?
    /// What is wrong.
    public var reason: String
    /// An error at `line` (and `column`) of `source`.
    public init(source: String, line: Int, column: Int? = nil, reason: String) {
      self.source = source
      self.line = line
      self.column = column
      self.reason = reason
    }

    /// `source:line:column: reason`.
    public var description: String { "\(source):\(line):\(column.map { "\($0):" } ?? "") \(reason)" }
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

  /// The pipeline description: comments removed, lines joined, every `${NAME}` replaced (by
  /// its value, or by `DEFAULT` in `${NAME:-DEFAULT}`).
  /// - Throws: ``Error`` naming the line of a variable with no value, an unterminated `${` or
  ///   a `"` never closed on its line.
  public func description(variables: [String: String] = [:]) throws(Error) -> String {
    var parts: [String] = []
    for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let code = Self.code(of: rawLine)
      if let open = code.openQuote {
        throw Error(source: source, line: index + 1, column: open + 1, reason: "'\"' without a closing '\"'")
      }
      var line = rawLine.prefix(code.characters.count)
      var expanded = ""
      while let start = line.range(of: "${") {
        expanded += line[..<start.lowerBound]
        guard let end = line[start.upperBound...].firstIndex(of: "}") else {
          throw Error(source: source, line: index + 1, reason: "'${' without a closing '}'")
        }
        let reference = String(line[start.upperBound..<end])
        let parts = reference.split(separator: ":-", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(parts[0])
        guard let value = variables[name] ?? (parts.count == 2 ? String(parts[1]) : nil) else {
          let column = rawLine.distance(from: rawLine.startIndex, to: start.lowerBound) + 1
          throw Error(
            source: source, line: index + 1, column: column,
            reason: "variable ${\(name)} has no value (set it with -D \(name)=…, or write ${\(name):-DEFAULT})")
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

  /// The description, checked before anything runs: every element must be installed and every
  /// property must exist on its element. Errors name the line and column and the nearest valid name.
  /// - Throws: ``Error``.
  public func checkedDescription(variables: [String: String] = [:]) throws(Error) -> String {
    let description = try description(variables: variables)
    for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      try checkDisplay(line: index + 1, rawLine, variables: variables)
      var current: Element?
      for token in Self.tokens(of: rawLine) {
        let place = (line: index + 1, column: token.column)
        if token.text == "!" {
          current = nil
          continue
        }
        guard !token.text.contains("${") else { continue }
        if let equals = token.text.firstIndex(of: "="), !token.text.hasPrefix("\""),
          current != nil || !token.text.contains("/")
        {
          let key = String(token.text[..<equals])
          guard let element = current, !key.contains(".") else { continue }
          if !element.hasProperty(key) {
            throw Error(
              source: source, line: place.line, column: place.column,
              reason: "element '\(element.factoryName ?? element.name)' has no property '\(key)'"
                + Self.suggestion(key, among: element.propertyNames))
          }
          continue
        }
        // Caps (`video/x-raw,…`), pad and element references (`name.`, `name.pad`) are not elements.
        if token.text.contains("/") || token.text.contains(".") || token.text.contains(",") {
          current = nil
          continue
        }
        guard let element = try? Element.make(token.text) else {
          throw Error(
            source: source, line: place.line, column: place.column,
            reason: "no element '\(token.text)'" + Self.suggestion(token.text, among: Gst.elementNames()))
        }
        current = element
      }
    }
    return description
  }

  /// Refuses a line that names a window sink (its variables expanded) when there is no
  /// display: `autovideosink` would crash the process, the others fail less clearly.
  private func checkDisplay(line: Int, _ rawLine: Substring, variables: [String: String]) throws(Error) {
    let expanded = try PipelineConfig(text: String(rawLine), source: source).description(variables: variables)
    guard let sink = Self.tokens(of: Substring(expanded)).first(where: { Display.windowSinks.contains($0.text) }),
      Display.current() == nil
    else { return }
    let column = Self.tokens(of: rawLine).first { $0.text == sink.text }?.column
    throw Error(
      source: source, line: line, column: column,
      reason: "'\(sink.text)' shows video in a window, and there is no display (\(Display.missing())):"
        + " run it in a desktop session or under Xvfb, or use another sink (fakesink, filesink)")
  }

  /// The characters of a line before its comment, each with whether it is inside double quotes,
  /// and the offset of a quote left open at the end of the line (nil when every quote closes).
  /// A `#` starts a comment outside quotes only (`text="Room #1"` keeps `#1`); inside quotes a
  /// backslash escapes the next character, as gst-launch reads them.
  static func code(of line: Substring) -> (characters: [(character: Character, quoted: Bool)], openQuote: Int?) {
    var characters: [(Character, Bool)] = []
    var openQuote: Int?
    var escaped = false
    for (offset, character) in line.enumerated() {
      if character == "#" && openQuote == nil { break }
      characters.append((character, openQuote != nil))
      if escaped {
        escaped = false
      } else if character == "\\" && openQuote != nil {
        escaped = true
      } else if character == "\"" {
        openQuote = openQuote == nil ? offset : nil
      }
    }
    return (characters, openQuote)
  }

  /// The words of a line outside comments, with their columns; quoted strings stay whole.
  static func tokens(of line: Substring) -> [(text: String, column: Int)] {
    var tokens: [(String, Int)] = []
    var word = ""
    var start = 0
    for (offset, (character, quoted)) in code(of: line).characters.enumerated() {
      if character.isWhitespace && !quoted {
        if !word.isEmpty { tokens.append((word, start + 1)) }
        word = ""
        continue
      }
      if word.isEmpty { start = offset }
      word.append(character)
    }
    if !word.isEmpty { tokens.append((word, start + 1)) }
    return tokens
  }

  /// `" (did you mean 'x'?)"` for the closest of `names`, or nothing when none is close.
  static func suggestion(_ name: String, among names: [String]) -> String {
    let limit = max(2, name.count / 3)
    // The distance is at least the difference in length: only names of about the same length are measured.
    let scored = names.lazy.filter { abs($0.count - name.count) <= limit }.map { ($0, editDistance(name, $0)) }
      .min { $0.1 < $1.1 }
    guard let (best, distance) = scored, distance <= limit else { return "" }
    return " (did you mean '\(best)'?)"
  }

  /// The Levenshtein distance between two words.
  static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    // Two rows, reused: a config's unknown name is measured against every installed element.
    var previous = Array(0...b.count)
    var row = previous
    for i in a.indices {
      row[0] = i + 1
      for j in b.indices {
        row[j + 1] = min(previous[j + 1] + 1, row[j] + 1, previous[j] + (a[i] == b[j] ? 0 : 1))
      }
      swap(&previous, &row)
    }
    return previous[b.count]
  }
}

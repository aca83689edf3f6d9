/// Reads a command's options one at a time, for its parser's `switch`; the errors name the
/// command (`stream: --fps needs a value`).
public struct OptionReader {
  /// The command the options are of (`stream`); nil for a program without commands.
  public let command: String?
  private let options: [String]
  private var index = 0

  /// A reader of `options`, the arguments after `command`.
  public init(command: String?, _ options: [String]) {
    self.command = command
    self.options = options
  }

  /// The next option, or nil at the end.
  public mutating func next() -> String? {
    guard index < options.count else { return nil }
    defer { index += 1 }
    return options[index]
  }

  /// The value after `option`.
  /// - Throws: ``UsageError`` when there is none.
  public mutating func value(_ option: String) throws(UsageError) -> String {
    guard let value = next() else { throw error("\(option) needs a value") }
    return value
  }

  /// A whole number above 0 after `option`.
  /// - Throws: ``UsageError`` when there is none, or it is not one.
  public mutating func count(_ option: String) throws(UsageError) -> Int {
    let text = try value(option)
    guard let number = Int(text), number > 0 else {
      throw error("\(option) takes a whole number above 0, not '\(text)'")
    }
    return number
  }

  /// The error for an option the command does not know.
  public func unknown(_ option: String) -> UsageError { error("unknown option '\(option)'") }

  /// A usage error that says `text`, after the command's name.
  public func error(_ text: String) -> UsageError {
    UsageError(description: command.map { "\($0): \(text)" } ?? text)
  }
}

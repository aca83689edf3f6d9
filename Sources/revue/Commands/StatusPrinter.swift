import Foundation

/// Prints a status line (over itself on a terminal) or a JSON line, each as it comes, pipes
/// included.
struct StatusPrinter {
  var json: Bool
  private let isTerminal = isatty(STDOUT_FILENO) != 0

  init(json: Bool) { self.json = json }

  func print(_ fields: [(String, Any)], text: String) {
    if json {
      let object = Dictionary(fields, uniquingKeysWith: { $1 })
      if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
        FileHandle.standardOutput.write(data + Data("\n".utf8))
      }
    } else if isTerminal {
      FileHandle.standardOutput.write(Data(("\r\u{1B}[K" + text).utf8))
    } else {
      // A line at a time into a pipe too (`revue receive --json | jq`), not a buffer's worth.
      FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
  }

  func finish() { if isTerminal && !json { FileHandle.standardOutput.write(Data("\n".utf8)) } }
}

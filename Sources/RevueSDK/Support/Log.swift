import Foundation

/// The SDK's log: dropped frames, refused buffers and other things that go wrong without an
/// error to throw. Warnings and errors go to standard error; every entry goes to ``entries(from:)``.
public enum RevueLog {
  /// How much an entry matters.
  public enum Level: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Detail for debugging.
    case debug
    /// Something worth knowing.
    case info
    /// Something went wrong and was handled (a frame dropped).
    case warning
    /// Something went wrong that the App should fix.
    case error

    /// Orders by importance.
    public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `debug`, `info`, `warning`, `error`.
    public var description: String {
      switch self {
      case .debug: "debug"
      case .info: "info"
      case .warning: "warning"
      case .error: "error"
      }
    }
  }

  /// One log entry.
  public struct Entry: Sendable, CustomStringConvertible {
    /// How much it matters.
    public var level: Level
    /// The part of the SDK that logged it, such as `BufferCapturer`.
    public var category: String
    /// What happened.
    public var message: String

    /// `revue [level] category: message`.
    public var description: String { "revue [\(level)] \(category): \(message)" }
  }

  /// One broadcast per level: the subscribers of entries from that level up.
  private static let broadcasts = [Level.debug, .info, .warning, .error].map { _ in Broadcast<Entry>() }

  /// The entries of `level` and above logged from now on, in order. A consumer that falls
  /// behind keeps the latest 256: ask only for the levels you read, so that a flood of debug
  /// entries never pushes out the warnings.
  public static func entries(from level: Level = .debug) -> AsyncStream<Entry> {
    broadcasts[level.rawValue].subscribe()
  }

  /// Logs an entry: to standard error from warnings up, and to every ``entries(from:)`` stream
  /// of its level or below.
  static func log(_ level: Level, _ category: String, _ message: String) {
    let entry = Entry(level: level, category: category, message: message)
    if level >= .warning { FileHandle.standardError.write(Data("\(entry)\n".utf8)) }
    for broadcast in broadcasts[...level.rawValue] { broadcast.send(entry) }
  }
}

import Foundation
import Testing

/// An X server of its own for a test (`Xvfb`, installed by `scripts/setup.sh`): no screen, no
/// TCP, the first free display number. Stop it when done.
public final class VirtualDisplay: Sendable {
  /// Its `DISPLAY`, such as `:1`.
  public let display: String
  private let server: Subprocess

  /// Starts `Xvfb` and waits (up to `seconds`) until it takes connections: it prints its
  /// display number then (`-displayfd`).
  public init(width: Int = 1280, height: Int = 720, within seconds: Double = 15) async throws {
    server = try Subprocess(
      URL(fileURLWithPath: "/usr/bin/Xvfb"),
      ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "\(width)x\(height)x24"])
    let output = try await server.waitForOutput(within: seconds, for: "its display number") { $0.contains("\n") }
    display = ":" + output.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// Ends the server.
  public func stop() async { await server.stop() }
}

import Foundation
import Glibc
import RevueProcess
import RevueSDK

/// The X server the render scenario draws on: `DISPLAY` when it names a server that is there,
/// or an Xvfb of the bench's own (1920×1080, no TCP), stopped after the scenario.
struct BenchDisplay {
  private let server: ChildProcess

  /// The sink gst-launch's side draws with, as `autovideosink` would pick it: `xvimagesink` on
  /// a server with XVideo (a desktop), `ximagesink` on one without (Xvfb), where `xvimagesink`
  /// cannot start.
  static func gstLaunchSink() async -> String {
    guard let probe = try? ChildProcess.gstLaunch("videotestsrc num-buffers=1 ! xvimagesink") else {
      return "ximagesink"
    }
    return await probe.wait(stoppingAfter: 10).succeeded ? "xvimagesink" : "ximagesink"
  }

  /// Starts an Xvfb and sets `DISPLAY` to it when there is no display; nil when there is one.
  /// - Throws: ``ChildProcess/StartError`` when Xvfb is missing, ``RevueError`` when it does not start
  ///   within 15 s.
  static func start() async throws -> BenchDisplay? {
    if let display = ProcessInfo.processInfo.environment["DISPLAY"], display.hasPrefix(":"),
      FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(display.dropFirst().prefix { $0.isNumber })")
    {
      return nil
    }
    let server = try ChildProcess(
      bench: "/usr/bin/Xvfb", ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "1920x1080x24"],
      output: .collect)
    // Xvfb writes its display number and a new line when it takes connections (`-displayfd`).
    guard await server.wait(within: 15, until: { $0.output.contains("\n") }) == .satisfied else {
      server.terminate()
      throw RevueError(.invalidState, "no display, and Xvfb did not start within 15 s (scripts/setup.sh installs it)")
    }
    setenv("DISPLAY", ":\(server.written.output.trimmingCharacters(in: .whitespacesAndNewlines))", 1)
    return BenchDisplay(server: server)
  }

  /// Stops the server, and forgets `DISPLAY`.
  func stop() {
    unsetenv("DISPLAY")
    server.terminate()
  }
}

import Foundation
import RevueProcess
import RevueTestSupport
import Testing

/// A `revue run` config that shows video in a window: with no display it is refused with the
/// line and a way out, where `gst-launch-1.0 … ! autovideosink` dies of a segmentation fault
/// (GStreamer 1.22); with a display (Xvfb) it runs.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct WindowSinkTests {
  /// The environment of a `revue` that draws (or would draw) a window, laid over `environment`.
  /// Under AddressSanitizer its leak check is off: X11, GL and Pango (the view's text overlay)
  /// keep allocations at exit in code LeakSanitizer cannot name (no frame pointers, modules
  /// unloaded by then), so no suppression can single them out. The views' own tests run in
  /// the test process, with the leak check (docs/sanitizers.md).
  static func drawing(_ environment: [String: String?]) -> [String: String?] {
    guard TestEnvironment.sanitizer == "address" else { return environment }
    return environment.merging(["ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0"]) { $1 }
  }

  /// A config whose sink comes from a variable, as `pipelines/receive-window.pipeline`'s.
  static func config() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("window-\(UUID()).pipeline")
    try "# thirty frames to a window\nvideotestsrc num-buffers=30\n  ! videoconvert ! ${SINK:-autovideosink}\n"
      .write(to: url, atomically: true, encoding: .utf8)
    return url
  }

  @Test func withNoDisplayAWindowSinkIsRefusedWithItsLine() async throws {
    let config = try Self.config()
    defer { try? FileManager.default.removeItem(at: config) }
    let noDisplay: [String: String?] = ["DISPLAY": "", "WAYLAND_DISPLAY": ""]
    for (variables, sink) in [([String](), "autovideosink"), (["-D", "SINK=ximagesink"], "ximagesink")] {
      let exit = try await RevueExecutableTests.run(
        ["run", config.path] + variables, environment: Self.drawing(noDisplay))
      #expect(exit.status == 1, "\(exit.error)")
      #expect(
        exit.error.contains(
          "\(config.path):3: '\(sink)' shows video in a window, and there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set)"
        ), "\(exit.error)")
    }
    // Another sink runs.
    let fake = try await RevueExecutableTests.run(
      ["run", config.path, "-D", "SINK=fakesink"], environment: Self.drawing(noDisplay))
    #expect(fake.status == 0, "\(fake.error)")
  }

  @Test func underXvfbTheWindowSinkRuns() async throws {
    let display = try await VirtualDisplay()
    let config = try Self.config()
    defer { try? FileManager.default.removeItem(at: config) }
    for variables in [[String](), ["-D", "SINK=ximagesink"]] {
      let exit = try await RevueExecutableTests.run(
        ["run", config.path] + variables,
        environment: Self.drawing(["DISPLAY": display.display, "WAYLAND_DISPLAY": ""]))
      #expect(exit.status == 0, "\(variables): \(exit.error)")
    }
    try await display.stop()
  }

  /// `revue receive --window`: headless, one line says there is no display and the stream is
  /// received all the same; under Xvfb the window opens and nothing is said.
  @Test func receiveWindowWithAndWithoutADisplay() async throws {
    let display = try await VirtualDisplay()
    let environments: [[String: String?]] = [
      ["DISPLAY": "", "WAYLAND_DISPLAY": ""], ["DISPLAY": display.display, "WAYLAND_DISPLAY": ""],
    ]
    for environment in environments {
      let port = FreePorts.rtp()
      let receiver = try ChildProcess(
        RevueExecutableTests.executable,
        ["receive", "--port", "\(port)", "--window", "--frames", "20", "--duration", "30"],
        environment: Self.drawing(environment))
      try await receiver.waitForError(containing: "revue: receiving", within: 20)
      let sender = try ChildProcess(
        RevueExecutableTests.executable,
        ["stream", "--test-pattern", "--size", "320x240", "--to", "127.0.0.1:\(port)", "--duration", "30"])
      let exit = try await receiver.exit(within: 30)
      await sender.stop()
      #expect(exit.status == 0, "\(exit.error)")
      let complaints = exit.error.split(separator: "\n").filter { $0.contains("no display") }
      #expect(complaints.count == (environment["DISPLAY"] == "" ? 1 : 0), "\(exit.error)")
    }
    try await display.stop()
  }
}

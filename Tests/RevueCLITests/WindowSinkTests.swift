import Foundation
import RevueTestSupport
import Testing

/// A `revue run` config that shows video in a window: with no display it is refused with the
/// line and a way out, where `gst-launch-1.0 … ! autovideosink` dies of a segmentation fault
/// (GStreamer 1.22); with a display (Xvfb) it runs.
@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(1))) struct WindowSinkTests {
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
    let noDisplay = ["DISPLAY": "", "WAYLAND_DISPLAY": ""]
    for (variables, sink) in [([String](), "autovideosink"), (["-D", "SINK=ximagesink"], "ximagesink")] {
      let exit = try await RevueExecutableTests.run(["run", config.path] + variables, environment: noDisplay)
      #expect(exit.status == 1, "\(exit.error)")
      #expect(
        exit.error.contains(
          "\(config.path):3: '\(sink)' shows video in a window, and there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set)"
        ), "\(exit.error)")
    }
    // Another sink runs.
    let fake = try await RevueExecutableTests.run(["run", config.path, "-D", "SINK=fakesink"], environment: noDisplay)
    #expect(fake.status == 0, "\(fake.error)")
  }

  @Test func underXvfbTheWindowSinkRuns() async throws {
    let display = try await VirtualDisplay()
    let config = try Self.config()
    defer { try? FileManager.default.removeItem(at: config) }
    for variables in [[String](), ["-D", "SINK=ximagesink"]] {
      let exit = try await RevueExecutableTests.run(
        ["run", config.path] + variables, environment: ["DISPLAY": display.display, "WAYLAND_DISPLAY": ""])
      #expect(exit.status == 0, "\(variables): \(exit.error)")
    }
    await display.stop()
  }

  /// `revue receive --window`: headless, one line says there is no display and the stream is
  /// received all the same; under Xvfb the window opens and nothing is said.
  @Test func receiveWindowWithAndWithoutADisplay() async throws {
    let display = try await VirtualDisplay()
    for environment in [["DISPLAY": "", "WAYLAND_DISPLAY": ""], ["DISPLAY": display.display, "WAYLAND_DISPLAY": ""]] {
      let port = FreePorts.rtp()
      let receiver = try Subprocess(
        RevueExecutableTests.executable,
        ["receive", "--port", "\(port)", "--window", "--frames", "20", "--duration", "30"], environment: environment)
      try await receiver.waitForError(containing: "revue: receiving", within: 20)
      let sender = try Subprocess(
        RevueExecutableTests.executable,
        ["stream", "--test-pattern", "--size", "320x240", "--to", "127.0.0.1:\(port)", "--duration", "30"])
      let exit = try await receiver.exit(within: 30)
      await sender.stop()
      #expect(exit.status == 0, "\(exit.error)")
      let complaints = exit.error.split(separator: "\n").filter { $0.contains("no display") }
      #expect(complaints.count == (environment["DISPLAY"] == "" ? 1 : 0), "\(exit.error)")
    }
    await display.stop()
  }
}

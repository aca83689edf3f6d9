import Foundation
import RevueProcess
import RevueTestSupport
import Testing

@testable import RevueSDK

/// This machine has no V4L2 driver, so the tests' cameras are virtual; a camera that refuses
/// access posts what `v4l2src` posts for `EACCES`, and a camera session maps that to 3017
/// (`SeedRulesTests`). Here the real `v4l2src` says it: run as `nobody` against a character
/// device only root may open, it fails with `EACCES` before any driver is asked; run as root,
/// the same node fails with `ENXIO` (no driver), which is no access denial.
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct V4L2AccessTests {
  init() { TestEnvironment.prepare() }

  @Test func v4l2srcsRefusalIsWhatTheVirtualCamerasPostAndReadsAsAnAccessDenial() async throws {
    let node = FileManager.default.temporaryDirectory.appending(path: "revue-video-\(UUID().uuidString)").path
    // Major 81 is V4L2's; root-only.
    let made = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/mknod"), ["-m", "600", node, "c", "81", "199"], within: 10)
    try #require(made.status == 0, "mknod: \(made.error)")
    defer { unlink(node) }

    let denied = try await Self.fault(ofOpening: node, as: "nobody")
    #expect(denied.message == "Could not open device '\(node)' for reading and writing.")
    #expect(denied.debug?.contains("system error: Permission denied") == true, "\(denied)")
    #expect(DeviceError.isAccessDenial(denied))

    let noDriver = try await Self.fault(ofOpening: node, as: nil)
    #expect(noDriver.debug?.contains("No such device or address") == true, "\(noDriver)")
    #expect(!DeviceError.isAccessDenial(noDriver))
  }

  /// The error `v4l2src` posts opening `node`, as `user` (nil: root), from `gst-launch-1.0`'s
  /// report: `ERROR: from element …: MESSAGE`, then the debug lines up to the next `ERROR:`.
  static func fault(ofOpening node: String, as user: String?) async throws -> MediaFault {
    let launch = ["/usr/bin/gst-launch-1.0", "v4l2src", "device=\(node)", "num-buffers=1", "!", "fakesink"]
    let command =
      user.map { ["/usr/bin/setpriv", "--reuid=\($0)", "--regid=nogroup", "--clear-groups"] + launch } ?? launch
    let exit = try await ChildProcess.run(URL(fileURLWithPath: command[0]), Array(command.dropFirst()), within: 20)
    let lines = (exit.output + "\n" + exit.error).split(separator: "\n").map(String.init)
    let marker = "ERROR: from element "
    guard let start = lines.firstIndex(where: { $0.hasPrefix(marker) }),
      let colon = lines[start].dropFirst(marker.count).range(of: ": ")
    else {
      throw NoError(description: "no error from v4l2src: \(exit.output) \(exit.error)")
    }
    let debug = lines[(start + 1)...].prefix { !$0.hasPrefix("ERROR:") }.joined(separator: "\n")
    return MediaFault(
      severity: .error, element: "v4l2src", message: String(lines[start][colon.upperBound...]), debug: debug)
  }

  struct NoError: Error, CustomStringConvertible {
    var description: String
  }
}

import Foundation
import RevueTestSupport
import Testing

/// A machine without an encoder's plugin: GStreamer given a plugin folder without it.
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct MissingElementTests {
  @Test func aMissingEncoderIsOneLineNamingItsPackageBeforeAnythingStarts() async throws {
    let plugins = "/usr/lib/x86_64-linux-gnu/gstreamer-1.0"
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
      "revue-plugins-\(UInt32.random(in: 0..<UInt32.max))")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    for name in try FileManager.default.contentsOfDirectory(atPath: plugins) where name != "libgstvpx.so" {
      try FileManager.default.createSymbolicLink(
        atPath: folder.appendingPathComponent(name).path, withDestinationPath: "\(plugins)/\(name)")
    }
    let port = FreePorts.rtp()
    let result = try await RevueExecutableTests.run(
      ["stream", "--test-pattern", "--codec", "vp8", "--duration", "1", "--to", "127.0.0.1:\(port)"],
      environment: [
        "GST_PLUGIN_SYSTEM_PATH_1_0": folder.path, "GST_PLUGIN_PATH": "",
        "GST_REGISTRY": folder.appendingPathComponent("registry.bin").path,
      ])
    #expect(result.status == 1)
    #expect(result.error.contains("no GStreamer element 'vp8enc'"), "\(result.error)")
    #expect(result.error.contains("apt-get install gstreamer1.0-plugins-good"), "\(result.error)")
    #expect(result.error.split(separator: "\n").count == 1, "\(result.error)")
    #expect(result.output.isEmpty)
  }
}

import Foundation
import RevueProcess
import RevueTestSupport
import Testing

/// `revue check` and the hardware encoders: none on this machine; every stand-in when the
/// stand-ins (Tests/RevueEncoderStandIns) are built as a plugin and put on `GST_PLUGIN_PATH`.
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct HardwareEncoderCheckTests {
  @Test func checkSaysNoHardwareEncoderWasFound() async throws {
    let result = try await RevueExecutableTests.run(["check"])
    #expect(result.status == 0, "\(result.error)")
    #expect(
      result.output.contains(
        "hardware encoders: none found (looked for vah264enc, vaapih264enc, nvh264enc, v4l2h264enc, vavp8enc)"))
  }

  /// The stand-ins' source built as a GStreamer plugin in a fresh directory, with a registry of
  /// its own (the user's cache is left alone).
  static func standInPlugin() async throws -> URL {
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("RevueEncoderStandIns")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("revue-standins-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let flags = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/pkg-config"), ["--cflags", "--libs", "gstreamer-1.0"], within: 10)
    try #require(flags.status == 0, "\(flags.error)")
    let compiled = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/cc"),
      [
        "-shared", "-fPIC", "-DREVUE_STANDIN_PLUGIN", "-I", source.appendingPathComponent("include").path,
        source.appendingPathComponent("StandIns.c").path, "-o",
        directory.appendingPathComponent("libgstrevuestandins.so").path,
      ] + flags.output.split(whereSeparator: \.isWhitespace).map(String.init), within: 30)
    try #require(compiled.status == 0, "\(compiled.error)")
    return directory
  }

  /// With every stand-in present, each is listed with its codec and plugin, the first of each
  /// codec used, and `--json` says the same.
  @Test func checkListsTheHardwareEncodersFound() async throws {
    let plugin = try await Self.standInPlugin()
    defer { try? FileManager.default.removeItem(at: plugin) }
    let environment = [
      "GST_PLUGIN_PATH": plugin.path, "GST_REGISTRY": plugin.appendingPathComponent("registry.bin").path,
    ]
    let result = try await RevueExecutableTests.run(["check"], environment: environment)
    #expect(result.status == 0, "\(result.error)")
    #expect(
      result.output.contains("\n  vah264enc  h264  (revuestandins)  used for h264; zero-copy input memory:VAMemory"))
    #expect(result.output.contains("\n  vavp8enc  vp8  (revuestandins)  used for vp8"))
    #expect(result.output.contains("\n  v4l2h264enc  h264  (revuestandins)  not used"))
    let json = try await RevueExecutableTests.run(["check", "--json"], environment: environment)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
    let found = try #require(object["hardwareEncoders"] as? [[String: Any]])
    #expect(
      found.compactMap { $0["factory"] as? String } == [
        "vah264enc", "vaapih264enc", "nvh264enc", "v4l2h264enc", "vavp8enc",
      ])
    #expect(
      found.filter { $0["used"] as? Bool == true }.compactMap { $0["factory"] as? String } == ["vah264enc", "vavp8enc"])
  }
}

import Foundation
import GStreamer

/// Process-wide set-up for tests that use GStreamer: call ``prepare()`` first in every suite.
public enum TestEnvironment {
  /// Turns on GStreamer's leaks tracer (unless the environment already chose tracers) and
  /// initializes GStreamer, once for the process.
  private static let prepared: Void = {
    setenv("GST_TRACERS", "leaks", 0)
    do {
      try Gst.initialize()
    } catch {
      fatalError("GStreamer cannot start: \(error)")
    }
  }()

  /// Prepares the process for GStreamer tests; later calls return at once.
  public static func prepare() { _ = prepared }

  /// The repository's root folder.
  public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  /// The virtual camera profiles shipped with the SDK.
  public static var cameraProfiles: [URL] {
    let folder = repositoryRoot.appendingPathComponent("Sources/RevueSDK/Resources/Cameras")
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    return names.filter { $0.hasSuffix(".caps") }.sorted().map { folder.appendingPathComponent($0) }
  }

  /// The number of threads of this process now.
  public static var threadCount: Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
  }
}

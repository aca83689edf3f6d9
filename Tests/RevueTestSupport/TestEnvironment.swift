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

  /// The sanitizer the tests run under (`REVUE_SANITIZER`, `address` or `thread`, which
  /// scripts/sanitizers.sh sets), nil for a plain build.
  public static let sanitizer: String? = ProcessInfo.processInfo.environment["REVUE_SANITIZER"].flatMap {
    $0.isEmpty ? nil : $0
  }

  /// How much longer real-time work may take than in a plain build: 2 under a sanitizer (the
  /// encoders and decoders of a trial run two to three times slower, so resent packets and frames
  /// come later), 1 otherwise. Only timing thresholds are scaled by it, never what is checked.
  public static var timingAllowance: Double { sanitizer == nil ? 1 : 2 }

  /// `duration`, scaled by ``timingAllowance``.
  public static func allowing(_ duration: Duration) -> Duration { duration * timingAllowance }

  /// The fraction of frames a real-time trial must show intact: `fraction` in a plain build;
  /// under a sanitizer the frames it may miss are doubled (0.95 becomes 0.90), since a frame
  /// whose packets are resent too late for the slower decoder is not shown intact.
  public static func allowing(intact fraction: Double) -> Double { 1 - (1 - fraction) * timingAllowance }

  /// The number of threads of this process now.
  public static var threadCount: Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
  }

  /// This process's resident memory now, in KiB (`VmRSS`).
  public static var residentKiB: Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
    return line.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
  }
}

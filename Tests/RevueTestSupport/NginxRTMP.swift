import Foundation
import RevueProcess
import Testing

/// A real RTMP server for the tests of `StreamOutput` and `revue stream --to rtmp://`: Debian's
/// nginx with its RTMP module (scripts/setup.sh installs both), serving RTMP on
/// `127.0.0.1:port`, application `live`, recording each published stream into `directory` (one
/// FLV file a publication), logging to standard error. Nothing outside the directory is used:
/// its prefix, config, pid file and recordings are there, and it runs as one process.
public struct NginxRTMP {
  /// The directory of its config, its pid file and its recordings.
  public let directory: URL
  /// The port it listens on, on 127.0.0.1.
  public let port: Int

  /// A server on a free port, recording into a new temporary directory.
  public init() throws {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent("revue-rtmp-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    port = FreePorts.tcp()
    let config = """
      master_process off;
      pid \(directory.path)/nginx.pid;
      error_log stderr info;
      load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
      events { worker_connections 64; }
      rtmp {
        server {
          listen 127.0.0.1:\(port);
          application live { live on; record all; record_path \(directory.path); record_unique on; }
        }
      }
      """
    try config.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
  }

  /// Starts it (no root paths: its prefix, pid and logs are the directory's) and waits until
  /// it listens.
  public func start() async throws -> ChildProcess {
    let nginx = try ChildProcess(
      URL(fileURLWithPath: "/usr/sbin/nginx"),
      [
        "-p", directory.path, "-c", directory.appendingPathComponent("nginx.conf").path, "-e", "stderr", "-g",
        "daemon off;",
      ])
    try await nginx.waitForError(containing: "event method", within: 10)
    return nginx
  }

  /// The frames ffmpeg decodes from each recording, oldest first.
  public func recordedFrames() async throws -> [Int] {
    let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".flv") }
      .sorted()
    var frames: [Int] = []
    for file in files {
      let read = try await ChildProcess.run(
        URL(fileURLWithPath: "/usr/bin/ffmpeg"),
        ["-hide_banner", "-i", directory.appendingPathComponent(file).path, "-map", "0:v", "-f", "framecrc", "-"],
        within: 30)
      #expect(read.status == 0, "\(file): \(read.error.suffix(600))")
      #expect(read.error.contains("Audio: aac"), "\(file): \(read.error.suffix(600))")
      frames.append(read.output.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains(",") }.count)
    }
    return frames
  }
}

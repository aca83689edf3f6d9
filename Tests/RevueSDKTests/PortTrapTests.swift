import Foundation
import RevueProcess
import RevueTestSupport
import Testing

/// Issue 30's traps, at compile time: code ported from the seeds, compiled by the toolchain's
/// `swiftc` against this build's modules, either compiles and is called, or fails with a
/// message naming what to write instead (never compiles into a method nothing calls).
@Suite(.tier(.unit), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct PortTrapTests {
  /// The package's root, from this file's path.
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  /// Compiles `source` as a program's `main.swift` (top-level code, as a seed's example pasted
  /// into a test program) to an object file; returns the exit status and the diagnostics.
  static func compile(_ source: String) async throws -> (status: Int32, diagnostics: String) {
    // The test binary sits beside the build's `Modules` directory.
    let modules = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
      .appendingPathComponent("Modules")
    let built =
      FileManager.default.fileExists(atPath: modules.path)
      ? modules : root.appendingPathComponent(".build/debug/Modules")
    let moduleMaps = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
      .filter { $0.hasPrefix("C") }.sorted()
      .map { root.appendingPathComponent("Sources/\($0)/module.modulemap").path }
      .filter { FileManager.default.fileExists(atPath: $0) }
    let includes = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/pkg-config"),
      ["--cflags-only-I", "gstreamer-1.0", "gstreamer-webrtc-1.0", "gstreamer-rtsp-server-1.0", "gstreamer-video-1.0"],
      within: 10
    ).output.split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }
      .filter { !$0.isEmpty }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("port-trap-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let main = directory.appendingPathComponent("main.swift")
    try source.write(to: main, atomically: true, encoding: .utf8)
    let arguments =
      [
        "swiftc", "-swift-version", "6", "-c", "-Onone", "-I", built.path, main.path, "-o",
        directory.appendingPathComponent("main.o").path,
      ]
      + moduleMaps.flatMap { ["-Xcc", "-fmodule-map-file=\($0)"] } + includes.flatMap { ["-Xcc", $0] }
    let exit = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), arguments, within: 60)
    return (exit.status, exit.error + exit.output)
  }

  /// Seed 002's `do { … } catch let error as VideoSDKError { … }` around
  /// `VideoSDK.createCameraVideoTrack`, in top-level code: it crashed Swift 6.3.1 (SILGen's
  /// "Found outside of lifetime use") while the call was `async throws(VideoSDKError)` (an error
  /// that carries a `String`, caught by a cast in a top-level `async` main); the face throws
  /// untyped, so it compiles.
  @Test func seed002sCatchOfVideoSDKErrorCompilesInTopLevelCode() async throws {
    let (status, diagnostics) = try await Self.compile(
      """
      import RevueVideoSDK

      do {
        let videoMediaTrack = try await VideoSDK.createCameraVideoTrack(
          encoderConfig: .h720p_w960p,
          facingMode: .front,
          multiStream: true,
          maxLayer: .MAX_LAYER_2,
          bitrateMode: .HIGH_QUALITY,
          codec: .VP8
        )
        print(videoMediaTrack)
      } catch let error as VideoSDKError {
        print("Failed to create custom video track: \\(error.name) \\(error)")
      } catch {
        print("Failed: \\(error)")
      }

      var cameraTrack: CustomStreamTrack?

      @MainActor func startPreview() {
        Task {
          do {
            cameraTrack = try await VideoSDK.createCameraVideoTrack()
            cameraTrack?.onEnded = { error in print("Camera track ended: \\(error?.name ?? "stopped")") }
          } catch let error as VideoSDKError {
            print("Failed to create camera track: \\(error)")
          } catch {
            print("Failed: \\(error)")
          }
        }
      }
      """)
    #expect(!diagnostics.contains("Found outside of lifetime use"), "\(diagnostics)")
    #expect(status == 0, "\(diagnostics)")
  }

  /// A seed 000 delegate or processor ported with its Apple types left in fails to compile,
  /// saying the RevueSDK type to write (not "cannot find type", nor a method nothing calls).
  @Test func appleTypesLeftInAPortFailWithTheRevueSDKName() async throws {
    let (status, diagnostics) = try await Self.compile(
      """
      import RevueSDK

      final class CameraSizeObserver: VideoCapturerDelegate {
        func capturer(_ capturer: VideoCapturer, didUpdate dimensions: CMVideoDimensions?) {}
      }

      final class Darken: VideoProcessor {
        func process(pixelBuffer: CVPixelBuffer) -> CVPixelBuffer? { pixelBuffer }
      }

      final class MuteWatch: RemoteParticipantDelegate {
        func participant(_ participant: Participant, trackPublication: TrackPublication, didUpdateIsMuted isMuted: Bool) {}
      }
      """)
    #expect(status != 0)
    #expect(diagnostics.contains("'CMVideoDimensions' has been renamed to 'Dimensions'"), "\(diagnostics)")
    #expect(diagnostics.contains("'CVPixelBuffer' has been renamed to 'PixelBuffer'"), "\(diagnostics)")
    #expect(
      diagnostics.contains("write participant(_: RemoteParticipant, track: Track, didUpdateIsMuted:)"), "\(diagnostics)"
    )
  }

  /// Seed 003's `stream { get set }` (Sora's `MediaStream`, set by its publisher) and
  /// `captureSession` (an `AVCaptureSession`) on the capturer: a port fails to compile, naming
  /// `track` and the GStreamer pipeline, instead of setting a property nothing reads.
  @Test func seed003sStreamAndCaptureSessionFailWithWhatToUse() async throws {
    let (status, diagnostics) = try await Self.compile(
      """
      import RevueSora

      let capturer = CameraVideoCapturer.current
      capturer?.stream = nil
      _ = capturer?.captureSession
      """)
    #expect(status != 0)
    #expect(diagnostics.contains("'stream' has been renamed to 'track'"), "\(diagnostics)")
    #expect(diagnostics.contains("AVCaptureSession is Apple's"), "\(diagnostics)")
  }
}

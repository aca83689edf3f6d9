import Foundation
import RevueSDKTestSupport
import RevueSora
import RevueTestSupport
import Synchronization
import Testing

/// Seed 003's `CameraVideoCapturer` against virtual cameras. Every capturer feeds one track, so
/// the tests run one after another.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct CameraVideoCapturerTests {
  /// What an operation's completion handler got: nil, or the error's text.
  static func completion(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable (@escaping @Sendable (Error?) -> Void) -> Void
  ) async throws -> String? {
    try await withDeadline(20, what, sourceLocation: sourceLocation) {
      await withCheckedContinuation { continuation in
        operation { error in continuation.resume(returning: error.map { "\($0)" }) }
      }
    }
  }

  /// Runs an operation and expects its completion handler to get nil. (A closure written inside
  /// `#expect(...)` was once compiled as another closure of the test by Swift 6.3: operations are
  /// called out here, never inside the macro.)
  static func succeeds(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable (@escaping @Sendable (Error?) -> Void) -> Void
  ) async throws {
    let error = try await completion(what, sourceLocation: sourceLocation, operation)
    #expect(error == nil, "\(what): \(error ?? "")", sourceLocation: sourceLocation)
  }

  /// Picks cameras by position among every camera of the process: it runs alone.
  @Test(.wholeProcess) func theStaticsFindTheCamerasAndTheirFormats() async throws {
    try await TestCameras.with(["laptop-integrated", "csi-camera-module"]) { devices in
      let front = try #require(CameraVideoCapturer.front)
      #expect(CameraVideoCapturer.front === front, "the same capturer on every read")
      #expect(front.device == devices[0] && front.position == .front)
      #expect(CameraVideoCapturer.back?.device == devices[1])
      #expect(CameraVideoCapturer.device(for: .back) == devices[1])
      #expect(CameraVideoCapturer.devices.contains(devices[0]))
      let format = try #require(CameraVideoCapturer.format(width: 630, height: 470, for: devices[0], frameRate: 30))
      #expect(format.dimensions == Dimensions(width: 640, height: 480))
      #expect(CameraVideoCapturer.maxFrameRate(30, for: format) == 30)
      let highest = try #require(CameraVideoCapturer.maxFrameRate(240, for: format))
      #expect(highest < 240 && format.supports(frameRate: Double(highest)))
      #expect(CameraVideoCapturer.current == nil && !front.isRunning)
    }
  }

  /// Seed 003's start, flip and stop, with the handlers; picks cameras by position: it runs alone.
  @Test(.wholeProcess) func startFlipAndStopKeepOneTrackGoing() async throws {
    try await TestCameras.with(["laptop-integrated", "csi-camera-module"]) { devices in
      let front = try #require(CameraVideoCapturer.front)
      let back = try #require(CameraVideoCapturer.back)
      let events = Mutex<[String]>([])
      CameraVideoCapturer.handlers.onStart = { capturer in events.withLock { $0.append("start \(capturer.position)") } }
      CameraVideoCapturer.handlers.onStop = { capturer in events.withLock { $0.append("stop \(capturer.position)") } }
      defer {
        CameraVideoCapturer.handlers.onStart = nil
        CameraVideoCapturer.handlers.onStop = nil
      }
      let renderer = FrameStream()
      front.track.add(videoRenderer: renderer)
      #expect(front.track === back.track, "one track for every capturer")
      let format = try #require(CameraVideoCapturer.format(width: 640, height: 480, for: front.device))
      try await Self.succeeds("the start") { done in
        front.start(format: format, frameRate: 30, completionHandler: done)
      }
      #expect(front.isRunning && CameraVideoCapturer.current === front)
      #expect(front.format == format && front.frameRate == 30)
      _ = try await renderer.next("a 640×480 frame") { $0.dimensions == Dimensions(width: 640, height: 480) }

      // Reads from other threads while the camera flips.
      let reader = Task.detached {
        var reads = 0
        while !Task.isCancelled {
          _ = (CameraVideoCapturer.current?.isRunning, front.format, back.frameRate, front.device, back.position)
          reads += 1
          await Task.yield()
        }
        return reads
      }
      try await Self.succeeds("the flip") { done in CameraVideoCapturer.flip(front, completionHandler: done) }
      #expect(CameraVideoCapturer.current === back && back.isRunning && !front.isRunning)
      #expect((back.track.capturer as? CameraCapturer)?.device == devices[1])
      #expect(back.format?.dimensions == Dimensions(width: 640, height: 480) && back.frameRate == 30)
      _ = try await renderer.next("a frame of the back camera")

      // Two flips asked at once run one after the other, in order.
      let order = Mutex<[String]>([])
      let both: Void = try await withDeadline(20, "two flips") {
        await withCheckedContinuation { continuation in
          CameraVideoCapturer.flip(back) { error in order.withLock { $0.append("first \(error == nil)") } }
          // Asked before the first ran: its capturer is back's, which the first flip stops; the
          // second flip then runs with what is current by then.
          CameraVideoCapturer.flip(front) { error in
            order.withLock { $0.append("second \(error == nil)") }
            continuation.resume()
          }
        }
      }
      _ = both
      #expect(order.withLock { $0 } == ["first true", "second true"])
      #expect(CameraVideoCapturer.current === back, "front after the first flip, back after the second")
      reader.cancel()
      #expect(await reader.value > 0)

      try await Self.succeeds("the stop") { done in back.stop(completionHandler: done) }
      #expect(CameraVideoCapturer.current == nil && !back.isRunning)
      let stoppedAgain = try await Self.completion("a second stop") { done in back.stop(completionHandler: done) }
      #expect(stoppedAgain?.contains("not running") == true)
      #expect(
        events.withLock { $0 } == ["start front", "start back", "start front", "start back", "stop back"])
    }
  }

  /// A flip whose camera is busy keeps the camera that ran; picks cameras by position: it runs alone.
  @Test(.wholeProcess) func aFlipThatFailsKeepsTheCameraThatRan() async throws {
    try await TestCameras.with(["laptop-integrated", "csi-camera-module"]) { devices in
      let front = try #require(CameraVideoCapturer.front)
      let format = try #require(CameraVideoCapturer.format(width: 1280, height: 720, for: front.device))
      try await Self.succeeds("the start") { done in
        front.start(format: format, frameRate: 30, completionHandler: done)
      }
      VirtualDevices.setBusy(devices[1].id, true)
      defer { VirtualDevices.setBusy(devices[1].id, false) }
      let error = try await Self.completion("the flip") { done in
        CameraVideoCapturer.flip(front, completionHandler: done)
      }
      #expect(error != nil)
      #expect(CameraVideoCapturer.current === front && front.isRunning)
      #expect((front.track.capturer as? CameraCapturer)?.device == devices[0])
      let renderer = FrameStream()
      front.track.add(videoRenderer: renderer)
      _ = try await renderer.next("a frame of the front camera after the failed flip")
      try await Self.succeeds("the stop") { done in front.stop(completionHandler: done) }
    }
  }

  /// Change, restart and onCapture on a capturer made for a USB camera (no position: it runs
  /// beside other tests, on its own camera).
  @Test func changeRestartAndOnCapture() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let capturer = CameraVideoCapturer(device: devices[0])
      #expect(capturer.position == .external)
      let notYet = try await Self.completion("a restart before a start") { done in
        capturer.restart(completionHandler: done)
      }
      #expect(notYet?.contains("before any start") == true)
      let renderer = FrameStream()
      capturer.track.add(videoRenderer: renderer)
      let large = try #require(CameraVideoCapturer.format(width: 1280, height: 720, for: devices[0]))
      try await Self.succeeds("the start") { done in
        capturer.start(format: large, frameRate: 30, completionHandler: done)
      }
      _ = try await renderer.next("a 720p frame") { $0.dimensions == .h720_169 }

      let small = try #require(CameraVideoCapturer.format(width: 640, height: 360, for: devices[0]))
      try await Self.succeeds("the change") { done in capturer.change(format: small, completionHandler: done) }
      #expect(capturer.format == small && capturer.frameRate == 30)
      _ = try await renderer.next("a 360p frame") { $0.dimensions == Dimensions(width: 640, height: 360) }

      try await Self.succeeds("the restart") { done in capturer.restart(completionHandler: done) }
      #expect(capturer.isRunning && capturer.format == small)

      // onCapture: what it returns is shown instead.
      let stamp = try PixelBuffer(
        width: 32, height: 16, format: .i420, bytes: [UInt8](repeating: 90, count: 32 * 16 * 3 / 2))
      CameraVideoCapturer.handlers.onCapture = { _, _ in stamp }
      _ = try await renderer.next("the frame onCapture returned") { $0.dimensions == Dimensions(width: 32, height: 16) }
      CameraVideoCapturer.handlers.onCapture = nil
      try await Self.succeeds("the stop") { done in capturer.stop(completionHandler: done) }
      let changedStopped = try await Self.completion("a change when stopped") {
        done in capturer.change(frameRate: 15, completionHandler: done)
      }
      #expect(changedStopped?.contains("not running") == true)
    }
  }
}

import Foundation
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

// Seed 000's code examples as the seed writes them, with only the Apple types changed
// (CVPixelBuffer → PixelBuffer, CMVideoDimensions → Dimensions; CoreImage's blur, which Linux
// lacks, → a darkening of the luma plane), run against virtual cameras.

/// Ask the camera for 1080p at 15 fps. The fields of CameraCaptureOptions cannot be changed in place:
/// copy the current options with the new values and pass the copy to set(options:).
@MainActor
func useFullHDCamera() async throws -> Bool {
  guard let camera = Room.shared.localParticipant?.cameraTrack.capturer as? CameraCapturer else { return false }
  return try await camera.set(options: camera.options.copyWith(dimensions: .h1080_169, fps: 15))
}

/// Switch between the front and the back camera.
@MainActor
func flipCamera() async -> Bool {
  guard let camera = Room.shared.localParticipant?.cameraTrack.capturer as? CameraCapturer else { return false }
  do {
    return try await camera.switchCameraPosition()
  } catch CameraCapturerError.deviceNotAvailable {
    return false  // for example: tell the user this device has no back camera
  } catch {
    return false
  }
}

/// Send frames that arrive from a network camera lying on its side.
final class NetworkCameraFeed: Sendable {
  let track = LocalVideoTrack.createBufferTrack(name: "ipcam", source: .camera)
  private let frameQueue = DispatchQueue(label: "ipcam.frames", qos: .userInitiated)

  func start() async throws {
    try await track.capturer?.startCapture()
  }

  /// Called by the network camera for every decoded frame.
  func didDecode(_ frame: PixelBuffer) {
    guard let capturer = track.capturer as? BufferCapturer else { return }
    frameQueue.async {
      // The camera is mounted on its side: turn each frame 90° clockwise to make it upright.
      capturer.capture(frame, timeStampNs: 0, rotation: ._90)
    }
  }

  func stop() async throws {
    try await track.capturer?.stopCapture()
  }
}

/// Darken every camera frame before it is shown and sent (the seed blurs with CoreImage).
final class DarkenProcessor: VideoProcessor {
  func process(pixelBuffer: PixelBuffer) -> PixelBuffer? {
    guard let source = try? (0..<pixelBuffer.format.planeCount).map({ try pixelBuffer.planeBytes($0) }) else {
      return nil
    }
    return try? PixelBuffer(width: pixelBuffer.width, height: pixelBuffer.height, format: pixelBuffer.format) {
      memory, planes in
      for (index, plane) in planes.enumerated() {
        let rowBytes = source[index].count / plane.rows
        for row in 0..<plane.rows {
          for column in 0..<rowBytes {
            let value = source[index][row * rowBytes + column]
            memory[plane.offset + row * plane.stride + column] = index == 0 ? value / 4 : value
          }
        }
      }
    }
  }
}

@MainActor
func darkenMyCamera(_ on: Bool) {
  Room.shared.localParticipant?.cameraTrack.processor = on ? DarkenProcessor() : nil
}

/// Show the size the camera actually sends, and tell the user when the camera cannot reach the
/// size they asked for. Both events arrive on the main thread.
@MainActor final class CameraSizeObserver: VideoCapturerDelegate {
  var onSize: ((Dimensions?) -> Void)?
  var onDowngrade: ((Dimensions, Dimensions) -> Void)?

  func observe() {
    Room.shared.localParticipant?.cameraTrack.capturer?.delegates.add(delegate: self)
  }

  func capturer(_ capturer: VideoCapturer, didUpdate dimensions: Dimensions?) {
    onSize?(dimensions)  // nil once the camera stops
  }

  func capturer(_ capturer: VideoCapturer, didDowngradeResolution requested: Dimensions, to actual: Dimensions) {
    onDowngrade?(requested, actual)
  }
}

@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct Seed000ExampleTests {
  /// Uses `Room.shared`'s camera, picked by position among every camera of the process: it runs alone.
  @Test(.wholeProcess) @MainActor func theCameraExamplesRunOnTheSharedRoom() async throws {
    let devices = [try await TestCameras.add("laptop-integrated"), try await TestCameras.add("csi-camera-module")]
    let participant = try #require(Room.shared.localParticipant)
    let capturer = try #require(participant.cameraTrack.capturer as? CameraCapturer)
    let (sizes, sizeContinuation) = AsyncStream.makeStream(of: Dimensions?.self)
    let (downgrades, downgradeContinuation) = AsyncStream.makeStream(of: String.self)
    let observer = CameraSizeObserver()
    observer.onSize = { sizeContinuation.yield($0) }
    observer.onDowngrade = { downgradeContinuation.yield("\($0) → \($1)") }
    observer.observe()
    let frames = FrameStream()
    participant.cameraTrack.add(videoRenderer: frames)

    // The camera is off: the options are only recorded.
    #expect(try await useFullHDCamera() == false)
    #expect(capturer.options.dimensions == .h1080_169 && capturer.options.fps == 15)
    participant.setCamera(enabled: true)
    // The front camera (the default position) tops out at 720p: it says so.
    let downgrade = try await withDeadline(20, "the downgrade") {
      for await text in downgrades { return text }
      throw CancellationError()
    }
    #expect(downgrade == "1920x1080 → 1280x720")
    let size = try await withDeadline(20, "the size") {
      for await size in sizes { return size }
      throw CancellationError()
    }
    #expect(size == .h720_169 && capturer.device == devices[0])

    // The back camera sends 1080p.
    #expect(await flipCamera() == true)
    #expect(capturer.device == devices[1])
    _ = try await frames.next("a 1080p frame of the back camera") { $0.dimensions == .h1080_169 }

    // Darkened frames reach the preview.
    darkenMyCamera(true)
    let dark = try await frames.next("a darkened frame") { frame in
      (try? frame.planeBytes(0).allSatisfy { $0 < 64 }) ?? false
    }
    #expect(dark.dimensions == .h1080_169)
    darkenMyCamera(false)

    participant.setCamera(enabled: false)
    let stopped = try await withDeadline(20, "the size to go") {
      for await size in sizes where size == nil { return true }
      return false
    }
    #expect(stopped)
    participant.cameraTrack.remove(videoRenderer: frames)
    capturer.delegates.remove(delegate: observer)
    _ = try await capturer.set(options: CameraCaptureOptions())
    try await TestCameras.remove(devices)
  }

  @Test func theNetworkCameraExampleSendsUprightFrames() async throws {
    let feed = NetworkCameraFeed()
    let frames = FrameStream()
    feed.track.add(videoRenderer: frames)
    #expect(feed.track.name == "ipcam" && feed.track.source == .camera)
    // Pushed before the start: dropped.
    let sideways = try PixelBuffer(
      width: 64, height: 32, format: .nv12, bytes: [UInt8](repeating: 128, count: 64 * 32 * 3 / 2))
    feed.didDecode(sideways)
    try await feed.start()
    feed.didDecode(sideways)
    let upright = try await frames.next("the turned frame")
    #expect(upright.dimensions == Dimensions(width: 32, height: 64))
    try await feed.stop()
  }
}

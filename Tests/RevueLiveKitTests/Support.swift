import RevueLiveKit
import RevueTestSupport
import Synchronization
import Testing

/// A renderer whose frames a test awaits (where a LiveKit App shows a `VideoView`).
final class Frames: VideoRenderer {
  let frames: AsyncStream<PixelBuffer>
  private let continuation: AsyncStream<PixelBuffer>.Continuation

  init() { (frames, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(4)) }

  func render(pixelBuffer: PixelBuffer) { continuation.yield(pixelBuffer) }

  /// The next frame that satisfies `condition`, within 20 seconds.
  func next(
    _ what: String = "a frame", sourceLocation: SourceLocation = #_sourceLocation,
    where condition: @escaping @Sendable (PixelBuffer) -> Bool = { _ in true }
  ) async throws -> PixelBuffer {
    let frames = frames
    return try await withDeadline(20, what, sourceLocation: sourceLocation) {
      for await frame in frames where condition(frame) { return frame }
      throw CancellationError()
    }
  }
}

/// Virtual cameras made for one test, each with an id of its own.
enum TestCameras {
  /// Adds a virtual camera of a shipped profile under a fresh id and waits until the SDK lists it.
  static func add(_ profileName: String) async throws -> CaptureDevice {
    var profile = try CameraProfile.named(profileName)
    profile.profileName = "\(profileName)-\(UInt32.random(in: 0..<UInt32.max))"
    let events = CameraCapturer.deviceEvents
    let id = VirtualDevices.addCamera(profile)
    if let device = try await CameraCapturer.captureDevices().first(where: { $0.id == id }) { return device }
    return try await withDeadline(20, "the SDK to list the camera \(id)") {
      for await event in events {
        if case .added(let device) = event, device.id == id { return device }
      }
      throw CancellationError()
    }
  }

  /// Runs `body` with virtual cameras of `profiles`, then removes them and waits until the SDK
  /// no longer lists them (so the next test does not see them).
  static func with<T>(
    _ profiles: [String], isolation: isolated (any Actor)? = #isolation, _ body: ([CaptureDevice]) async throws -> T
  ) async throws -> T {
    var devices: [CaptureDevice] = []
    for profile in profiles { devices.append(try await add(profile)) }
    do {
      let result = try await body(devices)
      try await remove(devices)
      return result
    } catch {
      try? await remove(devices)
      throw error
    }
  }

  /// Removes virtual cameras (those still there) and waits until the SDK no longer lists them.
  static func remove(_ devices: [CaptureDevice]) async throws {
    for device in devices {
      let events = CameraCapturer.deviceEvents
      VirtualDevices.remove(device.id)
      guard (try? await CameraCapturer.captureDevices().contains(device)) == true else { continue }
      try await withDeadline(20, "the SDK to drop the camera \(device.id)") {
        for await event in events where event == .removed(device) { return }
      }
    }
  }
}

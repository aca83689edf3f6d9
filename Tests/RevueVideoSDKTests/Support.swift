import Foundation
import RevueTestSupport
import RevueVideoSDK
import Synchronization
import Testing

/// A renderer whose frames a test awaits (where the seed adds an `RTCMTLVideoView`).
final class PreviewRenderer: VideoRenderer {
  let frames: AsyncStream<PixelBuffer>
  private let continuation: AsyncStream<PixelBuffer>.Continuation

  init() { (frames, continuation) = AsyncStream.makeStream(of: PixelBuffer.self, bufferingPolicy: .bufferingNewest(4)) }

  func render(pixelBuffer: PixelBuffer) { continuation.yield(pixelBuffer) }

  /// The next frame; throws when none comes within `seconds`.
  func next(within seconds: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) async throws
    -> PixelBuffer
  {
    let frames = frames
    return try await withDeadline(seconds, "a frame", sourceLocation: sourceLocation) {
      for await frame in frames { return frame }
      throw CancellationError()
    }
  }
}

/// Counts the calls of an `onEnded` handler (which checks that it runs on the main actor).
final class EndedRecorder: Sendable {
  private let state = Mutex<[VideoSDKError?]>([])
  private let called: AsyncStream<Void>
  private let continuation: AsyncStream<Void>.Continuation

  init() { (called, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1)) }

  /// The handler to set as `onEnded`.
  var handler: CustomStreamTrack.EndedHandler {
    { [self] error in
      MainActor.preconditionIsolated("onEnded called off the main actor")
      state.withLock { $0.append(error) }
      continuation.yield()
    }
  }

  /// The errors the handler was called with, in order.
  var calls: [VideoSDKError?] { state.withLock { $0 } }

  /// Waits for the first call, up to 10 seconds.
  func firstCall(sourceLocation: SourceLocation = #_sourceLocation) async throws -> VideoSDKError? {
    let called = called
    if calls.isEmpty {
      try await withDeadline(10, "onEnded", sourceLocation: sourceLocation) {
        for await _ in called { return }
      }
    }
    return calls[0]
  }
}

/// Virtual devices made for one test, each with an id of its own.
enum Devices {
  /// Adds a virtual camera of a shipped profile under a fresh id and waits until it is listed.
  static func addCamera(_ profileName: String) async throws -> CaptureDevice {
    var profile = try CameraProfile.named(profileName)
    profile.profileName = "\(profileName)-\(UInt32.random(in: 0..<UInt32.max))"
    let events = CameraCapturer.deviceEvents
    let id = VirtualDevices.addCamera(profile)
    return try await listed(id, events)
  }

  /// Adds a virtual microphone of a fresh name and waits until it is listed.
  static func addMicrophone() async throws -> CaptureDevice {
    let events = CameraCapturer.deviceEvents
    let id = VirtualDevices.addMicrophone(name: "VideoSDK Mic \(UInt32.random(in: 0..<UInt32.max))")
    return try await listed(id, events)
  }

  private static func listed(_ id: String, _ events: AsyncStream<DeviceEvent>) async throws -> CaptureDevice {
    let all = await VideoSDK.getCameras() + VideoSDK.getMics()
    if let device = all.first(where: { $0.id == id }) { return device }
    return try await withDeadline(20, "the SDK to list \(id)") {
      for await event in events {
        if case .added(let device) = event, device.id == id { return device }
      }
      throw CancellationError()
    }
  }

  /// Removes virtual devices and waits until they are no longer listed (so the next test does
  /// not see them).
  static func remove(_ devices: [CaptureDevice]) async throws {
    for device in devices {
      let events = CameraCapturer.deviceEvents
      VirtualDevices.remove(device.id)
      let all = await VideoSDK.getCameras() + VideoSDK.getMics()
      guard all.contains(device) else { continue }
      try await withDeadline(20, "the SDK to drop \(device.id)") {
        for await event in events where event == .removed(device) { return }
      }
    }
  }

  /// Runs `body` with virtual cameras of `profiles`, then removes them.
  static func withCameras<T>(
    _ profiles: [String], isolation: isolated (any Actor)? = #isolation, _ body: ([CaptureDevice]) async throws -> T
  ) async throws -> T {
    var devices: [CaptureDevice] = []
    for profile in profiles { devices.append(try await addCamera(profile)) }
    do {
      let result = try await body(devices)
      try await remove(devices)
      return result
    } catch {
      try? await remove(devices)
      throw error
    }
  }

  /// Runs `body` with a virtual microphone, then removes it.
  static func withMicrophone<T>(
    isolation: isolated (any Actor)? = #isolation, _ body: (CaptureDevice) async throws -> T
  ) async throws -> T {
    let device = try await addMicrophone()
    do {
      let result = try await body(device)
      try await remove([device])
      return result
    } catch {
      try? await remove([device])
      throw error
    }
  }
}

/// Expects `body` to throw a ``VideoSDKError`` of `code`.
func expectVideoSDKError(
  _ code: Int, _ name: String, sourceLocation: SourceLocation = #_sourceLocation,
  _ body: () async throws(VideoSDKError) -> CustomStreamTrack
) async {
  do {
    let track = try await body()
    Issue.record("expected \(name) (\(code)), got a track", sourceLocation: sourceLocation)
    track.stop()
  } catch {
    #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    #expect(error.name == name, sourceLocation: sourceLocation)
  }
}

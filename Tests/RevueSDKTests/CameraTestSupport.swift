import Foundation
import GStreamer
import RevueSDK
import RevueTestSupport
import Synchronization
import Testing

/// A renderer whose frames a test awaits.
final class FrameStream: VideoRenderer {
  let frames: AsyncStream<PixelBuffer>
  private let continuation: AsyncStream<PixelBuffer>.Continuation
  private let counter = Mutex(0)

  init() { (frames, continuation) = AsyncStream.makeStream(of: PixelBuffer.self, bufferingPolicy: .bufferingNewest(4)) }

  func render(pixelBuffer: PixelBuffer) {
    counter.withLock { $0 += 1 }
    continuation.yield(pixelBuffer)
  }

  var count: Int { counter.withLock { $0 } }

  /// The next frame that satisfies `condition`; throws when none comes within `seconds`.
  func next(
    _ what: String = "a frame", within seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation,
    where condition: @escaping @Sendable (PixelBuffer) -> Bool = { _ in true }
  ) async throws -> PixelBuffer {
    let frames = frames
    return try await withDeadline(seconds, what, sourceLocation: sourceLocation) {
      for await frame in frames where condition(frame) { return frame }
      throw CancellationError()
    }
  }
}

/// Records the widths of the frames (or the sizes of the audio buffers) a track renders, and
/// which came after a mark.
final class RenderRecorder: VideoRenderer, AudioRenderer {
  private let state = Mutex((marked: false, before: 0, after: [Int]()))
  private let continuation: AsyncStream<Int>.Continuation
  private let updates: AsyncStream<Int>

  init() {
    (updates, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .bufferingNewest(1))
  }

  func render(pixelBuffer: PixelBuffer) { record(pixelBuffer.width) }
  func render(pcmBuffer: AudioPCMBuffer) { record(pcmBuffer.frameLength) }

  private func record(_ value: Int) {
    let count = state.withLock { state in
      if state.marked { state.after.append(value) } else { state.before += 1 }
      return state.before + state.after.count
    }
    continuation.yield(count)
  }

  /// From now on, what is rendered counts as after.
  func mark() { state.withLock { $0.marked = true } }

  /// What was rendered after the mark.
  var after: [Int] { state.withLock { $0.after } }

  /// How many renders in all.
  var count: Int { state.withLock { $0.before + $0.after.count } }

  /// Waits for `more` renders after now.
  func advances(by more: Int, _ what: String) async throws { try await wait(for: count + more, what) }

  /// Waits until `count` renders in all.
  func wait(for count: Int, _ what: String) async throws {
    let updates = self.updates
    try await withDeadline(10, what) {
      for await seen in updates where seen >= count { return }
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

  /// A room sending to `rtp://127.0.0.1:PORT`, its camera capturer set to `device` at
  /// `dimensions` (not started).
  static func sendingRoom(to port: Int, camera device: CaptureDevice, dimensions: Dimensions) async throws -> (
    Room, LocalParticipant, CameraCapturer
  ) {
    let room = Room()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let participant = try #require(room.localParticipant)
    let capturer = try #require(participant.cameraTrack.capturer as? CameraCapturer)
    _ = try await capturer.set(options: capturer.options.copyWith(device: device, dimensions: dimensions))
    return (room, participant, capturer)
  }

  /// Runs `body` with virtual cameras of `profiles`, then removes them and waits until the SDK
  /// no longer lists them (so the next test does not see them).
  static func with<T>(_ profiles: [String], _ body: ([CaptureDevice]) async throws -> T) async throws -> T {
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

  /// Removes virtual cameras and waits until the SDK no longer lists them.
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

  /// Waits for the event `matching` after running `action`.
  static func expectDeviceEvent(
    _ matching: @escaping @Sendable (DeviceEvent) -> Bool, after action: () -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    let events = CameraCapturer.deviceEvents
    action()
    try await withDeadline(20, "a device event", sourceLocation: sourceLocation) {
      for await event in events where matching(event) { return }
    }
  }

  /// The camera events of `capturer` from now on, until one matches.
  static func waitForEvent(
    _ capturer: VideoCapturer, _ matching: @escaping @Sendable (VideoCapturer.Event) -> Bool,
    after action: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    let events = capturer.events
    try await action()
    try await withDeadline(20, "a capturer event", sourceLocation: sourceLocation) {
      for await event in events where matching(event) { return }
    }
  }
}

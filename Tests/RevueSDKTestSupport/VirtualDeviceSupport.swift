import RevueSDK
import RevueTestSupport
import Synchronization
import Testing

/// A renderer whose frames a test awaits (where an App shows a view).
public final class FrameStream: VideoRenderer {
  /// The frames rendered, the newest four kept while nobody reads.
  public let frames: AsyncStream<PixelBuffer>
  private let continuation: AsyncStream<PixelBuffer>.Continuation
  private let counter = Mutex(0)

  /// A renderer that has seen nothing yet.
  public init() {
    (frames, continuation) = AsyncStream.makeStream(of: PixelBuffer.self, bufferingPolicy: .bufferingNewest(4))
  }

  /// Keeps the frame for ``next(_:within:sourceLocation:where:)``.
  public func render(pixelBuffer: PixelBuffer) {
    counter.withLock { $0 += 1 }
    continuation.yield(pixelBuffer)
  }

  /// How many frames were rendered.
  public var count: Int { counter.withLock { $0 } }

  /// The next frame that satisfies `condition`; throws when none comes within `seconds`.
  public func next(
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

/// Virtual cameras and microphones made for one test, each with an id of its own.
public enum TestCameras {
  /// Adds a virtual camera of a shipped profile under a fresh id and waits until the SDK lists it.
  public static func add(_ profileName: String) async throws -> CaptureDevice {
    var profile = try CameraProfile.named(profileName)
    profile.profileName = "\(profileName)-\(UInt32.random(in: 0..<UInt32.max))"
    let events = CameraCapturer.deviceEvents
    return try await listed(VirtualDevices.addCamera(profile), events)
  }

  /// Adds a virtual microphone of a fresh name and waits until the SDK lists it.
  public static func addMicrophone(
    _ prefix: String = "Test Mic", signal: VirtualDevices.Signal = .sine(frequency: 440)
  ) async throws -> CaptureDevice {
    let events = CameraCapturer.deviceEvents
    let name = "\(prefix) \(UInt32.random(in: 0..<UInt32.max))"
    return try await listed(VirtualDevices.addMicrophone(name: name, signal: signal), events)
  }

  private static func listed(_ id: String, _ events: AsyncStream<DeviceEvent>) async throws -> CaptureDevice {
    if let device = try await present().first(where: { $0.id == id }) { return device }
    return try await withDeadline(20, "the SDK to list the device \(id)") {
      for await event in events {
        if case .added(let device) = event, device.id == id { return device }
      }
      throw CancellationError()
    }
  }

  private static func present() async throws -> [CaptureDevice] {
    try await CameraCapturer.captureDevices() + MicrophoneCapturer.captureDevices()
  }

  /// Waits until `device` is the only device of its kind the SDK lists: for a test that takes
  /// the first microphone or camera, once devices other tests removed are no longer listed.
  public static func waitUntilAlone(_ device: CaptureDevice) async throws {
    let events = CameraCapturer.deviceEvents
    let alone = { try await present().filter { $0.kind == device.kind } == [device] }
    if try await alone() { return }
    try await withDeadline(20, "\(device.name) to be the only \(device.kind) listed") {
      for await _ in events where try await alone() { return }
    }
  }

  /// Runs `body` with virtual cameras of `profiles`, then removes them and waits until the SDK
  /// no longer lists them (so the next test does not see them).
  public static func with<T>(
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

  /// Removes virtual devices (those still there) and waits until the SDK no longer lists them.
  public static func remove(_ devices: [CaptureDevice]) async throws {
    for device in devices {
      let events = CameraCapturer.deviceEvents
      VirtualDevices.remove(device.id)
      guard (try? await present().contains(device)) == true else { continue }
      try await withDeadline(20, "the SDK to drop the device \(device.id)") {
        for await event in events where event == .removed(device) { return }
      }
    }
  }
}

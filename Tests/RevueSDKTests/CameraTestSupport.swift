import Foundation
import GStreamer
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

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

extension TestCameras {
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

import RevueLiveKit
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

/// Returns a grey 320x180 picture for every frame, with the frame's time, and records what it saw.
final class ShrinkingProcessor: VideoProcessor {
  let seen = Mutex<[VideoFrame]>([])

  func process(frame: VideoFrame) -> VideoFrame? {
    seen.withLock { $0.append(frame) }
    guard
      let small = try? PixelBuffer(
        width: 320, height: 180, format: frame.buffer.format,
        fill: { memory, _ in
          for index in memory.indices { memory[index] = 128 }
        })
    else { return nil }
    return VideoFrame(
      dimensions: small.dimensions, rotation: frame.rotation, timeStampNs: frame.timeStampNs, buffer: small)
  }
}

/// Drops every other frame, and records the times of the frames it kept and dropped.
final class HalvingProcessor: VideoProcessor {
  let times = Mutex((count: 0, kept: Set<Int64>(), dropped: Set<Int64>()))

  func process(frame: VideoFrame) -> VideoFrame? {
    times.withLock { times in
      times.count += 1
      if times.count % 2 == 0 {
        times.dropped.insert(frame.timeStampNs)
        return nil
      }
      times.kept.insert(frame.timeStampNs)
      return frame
    }
  }
}

/// Returns, for every frame, a 320x180 picture lying on its side (white in its top left quarter,
/// black elsewhere) with the rotation that makes it upright: a quarter turn clockwise.
final class SidewaysProcessor: VideoProcessor {
  func process(frame: VideoFrame) -> VideoFrame? {
    guard
      let sideways = try? PixelBuffer(
        width: 320, height: 180, format: .i420,
        fill: { memory, planes in
          for index in memory.indices { memory[index] = 128 }  // grey chroma
          let luma = planes[0]
          for row in 0..<luma.rows {
            for column in 0..<luma.stride {
              memory[luma.offset + row * luma.stride + column] = row < 90 && column < 160 ? 235 : 16
            }
          }
        })
    else { return nil }
    return VideoFrame(dimensions: sideways.dimensions, rotation: ._90, timeStampNs: frame.timeStampNs, buffer: sideways)
  }
}

/// A VideoFrame processor given to `createCameraTrack(processor:)` decides what renderers see:
/// one frame path (RevueSDK's processor), so the capturer's size follows it too.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct ProcessorTests {
  init() { TestEnvironment.prepare() }

  @Test func aProcessorThatShrinksChangesWhatIsRendered() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let processor = ShrinkingProcessor()
      let track = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(device: devices[0]), processor: processor)
      let capturer = try #require(track.capturer as? CameraCapturer)
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      try await capturer.startCapture()
      let rendered = try await frames.next()
      #expect(rendered.dimensions == Dimensions(width: 320, height: 180))
      #expect(capturer.dimensions == Dimensions(width: 320, height: 180))
      try await capturer.stopCapture()

      let seen = processor.seen.withLock { $0 }
      let first = try #require(seen.first)
      // What the processor is given: the camera's upright frame, with its size and capture time.
      #expect(first.dimensions == .h720_169)
      #expect(first.buffer.dimensions == first.dimensions)
      #expect(first.rotation == ._0)
      #expect(first.timeStampNs > 0)
      #expect(UInt64(first.timeStampNs) == first.buffer.timestamp?.nanoseconds)
      // The new picture leaves with the time the processor gave it.
      let time = try #require(rendered.timestamp?.nanoseconds)
      #expect(seen.contains { UInt64($0.timeStampNs) == time })
    }
  }

  /// LiveKit sends a frame's rotation for receivers to apply; on Linux the SDK turns the pixels.
  @Test func aFrameReturnedWithARotationIsTurnedBeforeItIsRendered() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let track = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(device: devices[0], dimensions: .h360_169), processor: SidewaysProcessor())
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      try await track.capturer?.startCapture()
      let rendered = try await frames.next()
      try await track.capturer?.stopCapture()
      #expect(rendered.dimensions == Dimensions(width: 180, height: 320))
      // A quarter turn clockwise takes the top left quarter to the top right.
      let luma = try rendered.planeBytes(0)  // rows packed: 180 bytes each
      let stride = rendered.width
      let topRight = luma[40 * stride + 140]
      let topLeft = luma[40 * stride + 40]
      let bottomRight = luma[280 * stride + 140]
      #expect(topRight > 200 && topLeft < 50 && bottomRight < 50, "\(topLeft) \(topRight) \(bottomRight)")
    }
  }

  @Test func nilDropsTheFrame() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let processor = HalvingProcessor()
      let track = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(device: devices[0], dimensions: .h360_169), processor: processor)
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      try await track.capturer?.startCapture()
      var rendered: [Int64] = []
      for _ in 0..<6 {
        let frame = try await frames.next()
        rendered.append(Int64(try #require(frame.timestamp?.nanoseconds)))
      }
      try await track.capturer?.stopCapture()
      let times = processor.times.withLock { $0 }
      #expect(times.dropped.count >= 5)
      #expect(rendered.allSatisfy { times.kept.contains($0) })
      #expect(!rendered.contains { times.dropped.contains($0) })
    }
  }

  @Test func theTrackKeepsRevueSDKsProcessorProperty() async throws {
    // The face's processor runs as RevueSDK's (the track's `processor`): there is one frame path.
    let track = LocalVideoTrack.createCameraTrack(processor: CustomProcessor())
    #expect(track.processor != nil)
    #expect(track.source == .camera)
    #expect(track.name == "camera")
  }
}

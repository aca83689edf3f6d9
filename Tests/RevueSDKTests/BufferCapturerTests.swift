import Dispatch
import Foundation
import GStreamer
import RevueSDK
import RevueTestSupport
import Synchronization
import Testing

/// Records every frame rendered, with the thread it came on.
final class RecordingRenderer: VideoRenderer {
  let frames = Mutex<[(frame: PixelBuffer, thread: pthread_t)]>([])
  func render(pixelBuffer: PixelBuffer) { frames.withLock { $0.append((pixelBuffer, pthread_self())) } }
  var count: Int { frames.withLock { $0.count } }
  var last: PixelBuffer? { frames.withLock { $0.last?.frame } }
  var sizes: [Dimensions] { frames.withLock { $0.map(\.frame.dimensions) } }
}

/// A processor that can resize, drop, or wait.
final class TestProcessor: VideoProcessor {
  let calls = Mutex<[pthread_t]>([])
  let transform: @Sendable (PixelBuffer) -> PixelBuffer?
  init(_ transform: @escaping @Sendable (PixelBuffer) -> PixelBuffer? = { $0 }) { self.transform = transform }
  func process(pixelBuffer: PixelBuffer) -> PixelBuffer? {
    calls.withLock { $0.append(pthread_self()) }
    return transform(pixelBuffer)
  }
  var count: Int { calls.withLock { $0.count } }
}

@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct BufferCapturerTests {
  init() { TestEnvironment.prepare() }

  static func frame(_ format: PixelFormat = .nv12, _ width: Int = 64, _ height: Int = 48) -> PixelBuffer {
    try! PixelBuffer(width: width, height: height, format: format, bytes: PixelBufferTests.bytes(format, width, height))
  }

  /// A started buffer track with a renderer.
  static func startedTrack() async throws -> (LocalVideoTrack, BufferCapturer, RecordingRenderer) {
    let track = LocalVideoTrack.createBufferTrack()
    let capturer = try #require(track.capturer as? BufferCapturer)
    let renderer = RecordingRenderer()
    track.add(videoRenderer: renderer)
    try await capturer.startCapture()
    return (track, capturer, renderer)
  }

  @Test func defaultsOfBufferTracks() throws {
    let video = LocalVideoTrack.createBufferTrack()
    #expect(video.name == "buffer" && video.source == .unknown)
    #expect(video.capturer is BufferCapturer)
    #expect(video.capturer?.captureState == .idle)
    #expect(video.capturer?.dimensions == nil)
    let camera = LocalVideoTrack.createBufferTrack(name: "ipcam", source: .camera)
    #expect(camera.name == "ipcam" && camera.source == .camera)
    #expect(camera.sid != video.sid)
    let audio = LocalAudioTrack.createBufferTrack()
    #expect(audio.name == "audio_buffer" && audio.source == .unknown)
    #expect(audio.capturer is AudioBufferCapturer)
  }

  @Test func idleCapturerDropsEveryFrame() async throws {
    let track = LocalVideoTrack.createBufferTrack()
    let capturer = try #require(track.capturer as? BufferCapturer)
    let renderer = RecordingRenderer()
    track.add(videoRenderer: renderer)
    capturer.capture(Self.frame())
    #expect(renderer.count == 0)
    try await capturer.startCapture()
    capturer.capture(Self.frame())
    #expect(renderer.count == 1)
    try await capturer.stopCapture()
    capturer.capture(Self.frame())
    #expect(renderer.count == 1)
  }

  @Test func nv12AndI420PassWithoutACopy() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    defer { withExtendedLifetime(track) {} }
    for format in [PixelFormat.nv12, .i420] {
      let frame = Self.frame(format)
      capturer.capture(frame)
      let rendered = try #require(renderer.last)
      #expect(rendered.format == format)
      #expect(rendered.buffer.dataAddress == frame.buffer.dataAddress, "the \(format) pixels were copied")
    }
    try await capturer.stopCapture()
  }

  @Test func bgraIsConvertedToNV12() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    defer { withExtendedLifetime(track) {} }
    // A BGRA frame of one grey: its NV12 conversion is flat grey with neutral chroma.
    let grey = try PixelBuffer(
      width: 64, height: 48, format: .bgra, bytes: [UInt8](repeating: 128, count: 64 * 48 * 4))
    capturer.capture(grey)
    let rendered = try #require(renderer.last)
    #expect(rendered.format == .nv12)
    #expect(rendered.dimensions == Dimensions(width: 64, height: 48))
    let luma = try rendered.planeBytes(0)
    #expect(Set(luma).count == 1)
    #expect(try rendered.planeBytes(1).allSatisfy { (124...132).contains($0) })
    try await capturer.stopCapture()
  }

  @Test func otherFormatsAreDroppedWithAWarningAndTheTrackGoesOn() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    defer { withExtendedLifetime(track) {} }
    let log = RevueLog.entries(from: .warning)
    capturer.capture(Self.frame(.yuy2))
    capturer.capture(Self.frame(.rgba))
    #expect(renderer.count == 0)
    let warnings = try await withDeadline(20, "two warnings of the BufferCapturer") {
      var warnings: [String] = []
      for await entry in log where entry.level == .warning && entry.category == "BufferCapturer" {
        warnings.append(entry.message)
        if warnings.count == 2 { break }
      }
      return warnings
    }
    try #require(warnings.count == 2)
    #expect(warnings[0].contains("YUY2") && warnings[1].contains("RGBA"))
    capturer.capture(Self.frame(.nv12))
    #expect(renderer.count == 1)
    try await capturer.stopCapture()
  }

  @Test func aNewSizeIsFollowedAtOnce() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    defer { withExtendedLifetime(track) {} }
    capturer.capture(Self.frame(.nv12, 64, 48))
    capturer.capture(Self.frame(.nv12, 32, 24))
    capturer.capture(Self.frame(.bgra, 16, 8))
    capturer.capture(Self.frame(.bgra, 32, 16))
    #expect(
      renderer.sizes == [
        .init(width: 64, height: 48), .init(width: 32, height: 24), .init(width: 16, height: 8),
        .init(width: 32, height: 16),
      ])
    #expect(capturer.dimensions == Dimensions(width: 32, height: 16))
    try await capturer.stopCapture()
  }

  /// An NV12 frame, black but for a white 2×2 block at its top-left corner.
  static func markedFrame(_ width: Int, _ height: Int) throws -> PixelBuffer {
    var bytes = [UInt8](repeating: 16, count: width * height) + [UInt8](repeating: 128, count: width * height / 2)
    for (x, y) in [(0, 0), (1, 0), (0, 1), (1, 1)] { bytes[y * width + x] = 235 }
    return try PixelBuffer(width: width, height: height, format: .nv12, bytes: bytes)
  }

  /// Where the white block of ``markedFrame(_:_:)`` ended up: (x, y) of its brightest pixel.
  static func brightest(_ frame: PixelBuffer) throws -> (Int, Int) {
    let luma = try frame.planeBytes(0)
    let index = luma.indices.max { luma[$0] < luma[$1] }!
    return (index % frame.width, index / frame.width)
  }

  @Test func rotationTurnsThePixelsClockwise() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    defer { withExtendedLifetime(track) {} }
    let frame = try Self.markedFrame(64, 48)
    capturer.capture(frame, timeStampNs: 0, rotation: ._90)
    var turned = try #require(renderer.last)
    #expect(turned.dimensions == Dimensions(width: 48, height: 64))
    #expect(try Self.brightest(turned).0 >= 46 && Self.brightest(turned).1 <= 1, "top-left goes to top-right")
    capturer.capture(frame, timeStampNs: 0, rotation: ._180)
    turned = try #require(renderer.last)
    #expect(turned.dimensions == Dimensions(width: 64, height: 48))
    #expect(try Self.brightest(turned).0 >= 62 && Self.brightest(turned).1 >= 46, "top-left goes to bottom-right")
    capturer.capture(frame, timeStampNs: 0, rotation: ._270)
    turned = try #require(renderer.last)
    #expect(turned.dimensions == Dimensions(width: 48, height: 64))
    #expect(try Self.brightest(turned).0 <= 1 && Self.brightest(turned).1 >= 62, "top-left goes to bottom-left")
    #expect(capturer.dimensions == Dimensions(width: 48, height: 64))
    try await capturer.stopCapture()
  }

  @Test func processorRunsOncePerFrameOnTheCaptureThreadAfterRotation() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    let sizes = Mutex<[Dimensions]>([])
    let small = Self.frame(.nv12, 16, 16)
    let processor = TestProcessor { frame in
      sizes.withLock { $0.append(frame.dimensions) }
      return small
    }
    track.processor = processor
    capturer.capture(Self.frame(.nv12, 64, 48), timeStampNs: 0, rotation: ._90)
    #expect(processor.count == 1)
    #expect(sizes.withLock { $0 } == [Dimensions(width: 48, height: 64)], "the processor sees the upright frame")
    #expect(pthread_equal(processor.calls.withLock { $0[0] }, pthread_self()) != 0)
    #expect(pthread_equal(renderer.frames.withLock { $0[0].thread }, pthread_self()) != 0)
    #expect(renderer.last?.dimensions == Dimensions(width: 16, height: 16), "renderers get the processed frame")
    #expect(capturer.dimensions == Dimensions(width: 16, height: 16), "dimensions measure the processed frame")
    track.processor = TestProcessor { _ in nil }
    capturer.capture(Self.frame())
    #expect(renderer.count == 1, "nil drops the frame")
    track.processor = nil
    capturer.capture(Self.frame())
    #expect(renderer.count == 2)
    #expect(renderer.last?.dimensions == Dimensions(width: 64, height: 48))
    try await capturer.stopCapture()
  }

  @Test func aSlowProcessorDropsFramesInsteadOfQueueing() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    let (entered, enter) = AsyncStream.makeStream(of: Void.self)
    let release = DispatchSemaphore(value: 0)
    let first = Mutex(true)
    track.processor = TestProcessor { frame in
      if first.withLock({ value in
        defer { value = false }; return value
      }) {
        enter.yield()
        // The processor's own thread waits, not the test's; bounded all the same.
        _ = release.wait(timeout: .now() + .seconds(30))
      }
      return frame
    }
    let (done, finish) = AsyncStream.makeStream(of: Void.self)
    Thread.detachNewThread {
      capturer.capture(Self.frame())
      finish.yield()
    }
    try await withDeadline(20, "the processor to get the first frame") { for await _ in entered { return } }
    for _ in 0..<10 { capturer.capture(Self.frame()) }  // all arrive while the first is processed
    #expect(renderer.count == 0)
    release.signal()
    try await withDeadline(20, "the first capture to return") { for await _ in done { return } }
    #expect(renderer.count == 1)
    capturer.capture(Self.frame())
    #expect(renderer.count == 2)
    try await capturer.stopCapture()
  }

  @Test func capturingFromManyThreadsAtOnce() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    defer { withExtendedLifetime(track) {} }
    let frames = [Self.frame(.nv12), Self.frame(.bgra), Self.frame(.i420)]
    DispatchQueue.concurrentPerform(iterations: 300) { index in
      capturer.capture(frames[index % 3], timeStampNs: 0, rotation: VideoRotation.allCases[index % 4])
    }
    #expect(renderer.count > 0 && renderer.count <= 300)
    try await capturer.stopCapture()
  }

  @Test func timestampsAreKeptOrTakenNow() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    defer { withExtendedLifetime(track) {} }
    capturer.capture(Self.frame(), timeStampNs: 123_456_789, rotation: ._0)
    #expect(renderer.last?.timestamp == ClockTime(nanoseconds: 123_456_789))
    capturer.capture(Self.frame(.bgra), timeStampNs: 987_654_321, rotation: ._90)
    #expect(renderer.last?.timestamp == ClockTime(nanoseconds: 987_654_321))
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let before = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    capturer.capture(Self.frame())
    clock_gettime(CLOCK_MONOTONIC, &now)
    let after = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    let stamped = try #require(renderer.last?.timestamp?.nanoseconds)
    #expect(stamped >= before && stamped <= after)
    try await capturer.stopCapture()
  }

  @Test func renderersAreHeldWeakly() async throws {
    let track = LocalVideoTrack.createBufferTrack()
    let capturer = try #require(track.capturer as? BufferCapturer)
    try await capturer.startCapture()
    var renderer: RecordingRenderer? = RecordingRenderer()
    weak let weakRenderer = renderer
    track.add(videoRenderer: renderer!)
    capturer.capture(Self.frame())
    #expect(renderer?.count == 1)
    renderer = nil
    #expect(weakRenderer == nil)
    capturer.capture(Self.frame())
    let kept = RecordingRenderer()
    track.add(videoRenderer: kept)
    track.remove(videoRenderer: kept)
    capturer.capture(Self.frame())
    #expect(kept.count == 0)
    try await capturer.stopCapture()
  }

  @Test func mutePlaceholderReplacesFramesAndSkipsTheProcessor() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    let processor = TestProcessor()
    track.processor = processor
    let placeholder = Self.frame(.i420, 32, 32)
    track.mutePlaceholder = placeholder
    try await track.mute()
    #expect(track.isMuted)
    #expect(renderer.last?.buffer.dataAddress == placeholder.buffer.dataAddress, "muting shows the placeholder at once")
    capturer.capture(Self.frame())
    #expect(renderer.count == 2)
    #expect(renderer.last?.dimensions == Dimensions(width: 32, height: 32), "frames are replaced by the placeholder")
    let other = Self.frame(.nv12, 16, 16)
    track.mutePlaceholder = other
    #expect(renderer.last?.dimensions == Dimensions(width: 16, height: 16), "a new placeholder shows at once")
    let countBeforeNone = renderer.count
    track.mutePlaceholder = nil
    capturer.capture(Self.frame())
    #expect(renderer.count == countBeforeNone, "no placeholder: nothing")
    try await track.unmute()
    capturer.capture(Self.frame())
    #expect(renderer.last?.dimensions == Dimensions(width: 64, height: 48))
    #expect(processor.count == 3, "the processor saw the three captured frames, never the placeholder")
    try await capturer.stopCapture()
  }

  @Test func stateAndSizeEventsInOrder() async throws {
    let track = LocalVideoTrack.createBufferTrack()
    let capturer = try #require(track.capturer as? BufferCapturer)
    let events = capturer.events
    try await capturer.startCapture()
    capturer.capture(Self.frame(.nv12, 64, 48))
    capturer.capture(Self.frame(.nv12, 64, 48))
    capturer.capture(Self.frame(.bgra, 32, 16))
    try await capturer.stopCapture()
    let seen = try await withDeadline(20, "five capturer events") {
      var seen: [VideoCapturer.Event] = []
      for await event in events {
        seen.append(event)
        if seen.count == 5 { break }
      }
      return seen
    }
    #expect(
      seen == [
        .state(.capturing), .dimensions(Dimensions(width: 64, height: 48)),
        .dimensions(Dimensions(width: 32, height: 16)),
        .state(.idle), .dimensions(nil),
      ])
    #expect(capturer.dimensions == nil)
  }

  @MainActor final class Delegate: VideoCapturerDelegate {
    var log: [String] = []
    let done: AsyncStream<Void>.Continuation
    init(done: AsyncStream<Void>.Continuation) { self.done = done }
    func capturer(_ capturer: VideoCapturer, didUpdate dimensions: Dimensions?) {
      MainActor.assertIsolated()
      log.append("size \(dimensions.map(\.description) ?? "nil")")
      if dimensions == nil { done.yield() }
    }
    func capturer(_ capturer: VideoCapturer, didUpdate state: CaptureState) {
      MainActor.assertIsolated()
      log.append("state \(state)")
    }
  }

  @Test @MainActor func delegatesHearOnTheMainActorInOrder() async throws {
    let track = LocalVideoTrack.createBufferTrack()
    let capturer = try #require(track.capturer as? BufferCapturer)
    let (done, continuation) = AsyncStream.makeStream(of: Void.self)
    let delegate = Delegate(done: continuation)
    capturer.delegates.add(delegate: delegate)
    try await capturer.startCapture()
    try await withDeadline(20, "two frames pushed from a background thread") {
      await Task.detached {
        capturer.capture(Self.frame(.nv12, 64, 48))
        capturer.capture(Self.frame(.nv12, 32, 24))
      }.value
    }
    try await capturer.stopCapture()
    try await withDeadline(20, "the delegate to hear the size go") { for await _ in done { return } }
    #expect(delegate.log == ["state capturing", "size 64x48", "size 32x24", "state idle", "size nil"])
  }

  @Test func releasingACapturingCapturerLogsAnError() async throws {
    let log = RevueLog.entries(from: .error)
    do {
      let track = LocalVideoTrack.createBufferTrack()
      try await track.capturer?.startCapture()
    }
    let entry = try await withDeadline(20, "an error of the BufferCapturer") {
      for await entry in log where entry.level == .error && entry.category == "BufferCapturer" { return entry }
      throw CancellationError()
    }
    #expect(entry.message.contains("released while capturing"))
  }
}

import Foundation
import Glibc
import RevueCommandLine
import RevueLab
import RevueProcess
import RevueSDK
import Synchronization

/// The Revue side of a scenario, run as a child of `revue-bench` (`revue-bench --child KIND
/// KEY=VALUE …`) so that its CPU time and memory are measured like gst-launch's: of its own
/// process, by the parent. It writes its results to standard output as `KEY=VALUE` lines, and
/// the ones that run until told stop when their standard input closes.
struct BenchChild: Equatable {
  /// What to run: `capture`, `send`, `receive`, `latency`, `startup`, `scale`, `render`, `link-trial` (one
  /// trial of `revue-bench links`), or `idle` (GStreamer
  /// initialized and a room made, nothing more, until standard input closes: the memory every
  /// Revue process starts with).
  var kind: String
  /// The scenario's parameters.
  var parameters: [String: String]

  /// Parses `KIND KEY=VALUE …`.
  init(arguments: [String]) {
    kind = arguments.first ?? ""
    parameters = Dictionary(
      arguments.dropFirst().map { argument in
        let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
        return (parts[0], parts.count > 1 ? parts[1] : "")
      }, uniquingKeysWith: { $1 })
  }

  /// Runs the child's part.
  /// - Throws: ``RevueError`` when a parameter is missing or the SDK fails.
  func run() async throws {
    signal(SIGINT, SIG_IGN)  // the parent stops a Revue child by closing its standard input
    switch kind {
    case "capture": try await capture()
    case "send": try await send()
    case "receive": try await receive()
    case "latency": try await latency()
    case "startup": try await startup()
    case "scale": try await scale()
    case "render": try await render()
    case "link-trial":
      // One trial of `revue-bench links`, alone in this process: what it measured as one JSON line.
      let trial = try BenchCommand.Links.trial(parameters)
      let result = try await trial.run(port: try BenchCommand.Links.freePorts(pairs: 3))
      report(
        "measured=\(String(decoding: try JSONEncoder().encode(BenchCommand.Links.Measured(result)), as: UTF8.self))")
    case "idle":
      // `check()` initializes GStreamer and reads its registry, as gst-launch does before it runs.
      report("elements=\(NodeElements.check().count) participant=\(Room().localParticipant != nil)")
      await Self.standardInputClosed()
    default: throw RevueError(.invalidInput, "bench child: unknown kind '\(kind)'")
    }
  }

  /// An integer parameter.
  private func number(_ key: String) throws -> Int {
    guard let value = parameters[key].flatMap(Int.init) else {
      throw RevueError(.invalidInput, "bench child: no \(key) in \(parameters)")
    }
    return value
  }

  /// `rtp://127.0.0.1:PORT`.
  private func loopback(_ port: Int) -> URL { URL(string: "rtp://127.0.0.1:\(port)")! }

  /// The publish options of a stream: its bitrate at 30 fps.
  private func options(_ stream: BenchStream) -> VideoPublishOptions {
    VideoPublishOptions(
      encoding: VideoEncoding(maxBitrate: stream.bitrate, maxFps: 30), preferredCodec: stream.codec)
  }

  /// Writes one result line and flushes it to the parent at once.
  private func report(_ line: String) {
    FileHandle.standardOutput.write(Data("\(line)\n".utf8))
  }

  /// Pushes 1920×1080 frames through a buffer track to a renderer as fast as it takes them, in
  /// rounds of `frames` frames for at least 0.3 s; reports `fps`, `cpu` (ms per frame, this process, the loop only) and `copied` (bytes
  /// per frame the renderer got in other memory than the source's).
  private func capture() async throws {
    let frames = try number("frames")
    let format: PixelFormat = parameters["format"] == "bgra" ? .bgra : .nv12
    let rotation: VideoRotation = parameters["rotation"] == "90" ? ._90 : ._0
    let frame = try await Self.testFrame(format: format, width: 1920, height: 1080)
    let track = LocalVideoTrack.createBufferTrack(name: "bench")
    let capturer = track.capturer as! BufferCapturer
    let renderer = CopyCountingRenderer(source: frame.buffer.dataAddress)
    track.add(videoRenderer: renderer)
    try await capturer.startCapture()
    capturer.capture(frame, timeStampNs: 0, rotation: rotation)  // builds the conversion before timing
    // Rounds of `frames` frames until 0.3 s have passed: a pass-through frame takes a microsecond.
    let (cpuBefore, start) = (Self.cpuSeconds(), monotonicNanoseconds())
    var pushed = 0
    while pushed == 0 || monotonicNanoseconds() - start < 300_000_000 {
      for _ in 0..<frames { capturer.capture(frame, timeStampNs: 0, rotation: rotation) }
      pushed += frames
    }
    let elapsed = milliseconds(from: start, to: monotonicNanoseconds()) / 1000
    let cpu = Self.cpuSeconds() - cpuBefore
    let counts = renderer.counts.withLock { $0 }
    guard counts.frames == pushed + 1 else {
      throw RevueError(.gstreamer, "only \(counts.frames) of \(pushed + 1) frames reached the renderer")
    }
    report("fps=\(Double(pushed) / elapsed)")
    report("cpu=\(cpu * 1000 / Double(pushed))")
    report("copied=\(Double(counts.copiedBytes) / Double(counts.frames))")
    try await capturer.stopCapture()
  }

  /// Publishes a virtual camera (raw NV12, or MJPEG) to `port` until it has captured `frames`
  /// frames, or pushes `frames` frames through a published buffer track; reports `encoded` and
  /// `conversions` (``FrameConversion/running()`` at the end, while the pipelines still run).
  private func send() async throws {
    let stream = try BenchStream(parameters: parameters)
    let frames = try number("frames")
    if let format = stream.source.pushedFormat { return try await sendPushed(stream, format, frames: frames) }
    let (room, capturer, publication) = try await publishCamera(stream, port: try number("port"))
    let counter = FrameCounter(until: frames)
    room.localParticipant!.cameraTrack.add(videoRenderer: counter)
    try await capturer.startCapture()
    await counter.waitForAll()
    let conversions = FrameConversion.running()
    let format = capturer.format
    try await capturer.stopCapture()
    let encoded = publication.statistics.framesEncoded
    await room.disconnect()
    guard stream.source != .mjpegCamera || format?.encoding == .jpeg else {
      throw RevueError(.invalidState, "the camera used \(format.map { "\($0)" } ?? "no format"), not MJPEG")
    }
    report("encoded=\(encoded)")
    report("conversions=\(conversions.count)")
  }

  /// Publishes a buffer track to `port` and pushes it `frames` copies of the stream's test frame
  /// in `format`, 30 a second; reports `encoded`, `copied` (bytes per encoded frame that reached
  /// the encoder in other memory than the frame pushed, or than its conversion to NV12) and
  /// `conversions` (as ``send()``).
  private func sendPushed(_ stream: BenchStream, _ format: PixelFormat, frames: Int) async throws {
    let frame = try await Self.testFrame(format: format, width: stream.width, height: stream.height)
    // This run measures the copies: the publication counts them (off by default, it costs a lock a frame).
    LocalTrackPublication.countsCopiedBytes = true
    let room = Room()
    try await room.connect(to: loopback(try number("port")))
    let track = LocalVideoTrack.createBufferTrack(name: "bench")
    let publication = try await room.localParticipant!.publish(videoTrack: track, options: options(stream))
    let capturer = track.capturer as! BufferCapturer
    try await capturer.startCapture()
    await Self.push(frame, times: frames, into: capturer)
    let statistics = publication.statistics
    let conversions = FrameConversion.running()
    try await capturer.stopCapture()
    await room.disconnect()
    report("encoded=\(statistics.framesEncoded)")
    report("copied=\(Double(statistics.bytesCopiedToEncoder ?? 0) / Double(max(1, statistics.framesEncoded)))")
    report("conversions=\(conversions.count)")
  }

  /// Pushes `frame` `times` times, 30 times a second, into `capturer`, from a thread of its own
  /// that waits for each frame's time with `clock_nanosleep` (as a GStreamer source waits on
  /// its clock): `Task.sleep` costs a dispatch timer and two thread wake-ups a frame, which the
  /// bench would count as the SDK's work.
  private static func push(_ frame: PixelBuffer, times: Int, into capturer: BufferCapturer) async {
    await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
      Thread {
        var next = timespec()
        clock_gettime(CLOCK_MONOTONIC, &next)
        for _ in 0..<times {
          capturer.capture(frame)
          next.tv_nsec += 33_333_333
          if next.tv_nsec >= 1_000_000_000 {
            (next.tv_sec, next.tv_nsec) = (next.tv_sec + 1, next.tv_nsec - 1_000_000_000)
          }
          while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil) == EINTR {}
        }
        finished.resume()
      }.start()
    }
  }

  /// Shows one pushed 1920×1080 I420 frame (a decoder's) `frames` times, 30 times a second, in
  /// a 1920×1080 `VideoView` window on `DISPLAY`; reports `shown` (whether the view drew them,
  /// in a window) and `copied` (``VideoView/bytesCopiedPerFrame``).
  @MainActor private func render() async throws {
    let frames = try number("frames")
    VideoView.countsCopiedBytes = true
    let frame = try await Self.testFrame(format: .i420, width: 1920, height: 1080)
    let track = LocalVideoTrack.createBufferTrack(name: "bench")
    let view = VideoView(size: Dimensions(width: 1920, height: 1080), target: .window)
    view.track = track
    let capturer = track.capturer as! BufferCapturer
    try await capturer.startCapture()
    await Self.push(frame, times: frames, into: capturer)
    report("shown=\(view.renderer != "fakesink" && view.didRenderFirstFrame && view.isRendering)")
    report("copied=\(view.bytesCopiedPerFrame ?? -1)")
    try await capturer.stopCapture()
  }

  /// The one SMPTE-bars frame pushed sources repeat: made by `videotestsrc`, as gst-launch's side
  /// makes it, and read from its pipe straight into the frame's memory (no second copy of it is
  /// ever held, which peak memory would count).
  static func testFrame(format: PixelFormat, width: Int, height: Int) async throws -> PixelBuffer {
    let maker = try ChildProcess.gstLaunch(
      "\(BenchStream.testFrame(format: format, width: width, height: height)) ! fdsink fd=1", output: .pipe)
    var complete = false
    let frame = try PixelBuffer(width: width, height: height, format: format) { memory, _ in
      complete = readFully(maker.outputDescriptor, memory)
    }
    let exit = await maker.wait()
    guard exit.succeeded, complete else { throw RevueError(.gstreamer, "no test frame: \(exit.error.suffix(600))") }
    return frame
  }

  /// A room sending to `port` with the camera track published and the virtual camera of the
  /// stream's kind chosen (not started).
  private func publishCamera(_ stream: BenchStream, port: Int) async throws -> (
    Room, CameraCapturer, LocalTrackPublication
  ) {
    let device = try await VirtualDevices.camera(
      profile: stream.source == .mjpegCamera ? "usb-720p-webcam" : "csi-camera-module")
    let room = Room()
    try await room.connect(to: loopback(port))
    let participant = room.localParticipant!
    let capturer = participant.cameraTrack.capturer as! CameraCapturer
    _ = try await capturer.set(
      options: CameraCaptureOptions(
        device: device, dimensions: Dimensions(width: Int32(stream.width), height: Int32(stream.height)), fps: 30))
    let publication = try await participant.publish(videoTrack: participant.cameraTrack, options: options(stream))
    return (room, capturer, publication)
  }

  /// Receives a stream on `port` until standard input closes; reports `frames` (decoded).
  private func receive() async throws {
    let stream = try BenchStream(parameters: parameters)
    let room = Room()
    let remote = try await room.listen(on: loopback(try number("port")), codec: stream.codec)
    let counter = FrameCounter(until: .max)
    remote.videoTrack!.add(videoRenderer: counter)
    report("ready=1")
    await Self.standardInputClosed()
    report("frames=\(counter.count)")
    await room.disconnect()
  }

  /// Sends `frames` stamped I420 frames at 30 fps through a buffer track published to `port`, and
  /// receives them with `Room.listen` on the same port; reports `latency=N:MS` for each frame
  /// decoded (from `capture` to the receiver's renderer).
  private func latency() async throws {
    let stream = try BenchStream(parameters: parameters)
    let (frames, port) = (try number("frames"), try number("port"))
    let receiving = Room()
    let remote = try await receiving.listen(on: loopback(port), codec: stream.codec)
    let stamps = StampReader()
    remote.videoTrack!.add(videoRenderer: stamps)
    let room = Room()
    try await room.connect(to: loopback(port))
    let track = LocalVideoTrack.createBufferTrack(name: "latency")
    let capturer = track.capturer as! BufferCapturer
    _ = try await room.localParticipant!.publish(videoTrack: track, options: options(stream))
    try await capturer.startCapture()
    var pixels = FrameStamp.blankI420(width: stream.width, height: stream.height)
    var sent: [Int: UInt64] = [:]
    let start = ContinuousClock.now
    for index in 0..<frames {
      try await Task.sleep(until: start + .microseconds(33_333 * index), clock: .continuous)
      FrameStamp.bench.write(index, into: &pixels, width: stream.width)
      let frame = try PixelBuffer(width: stream.width, height: stream.height, format: .i420, bytes: pixels)
      sent[index] = monotonicNanoseconds()
      capturer.capture(frame)
    }
    try await Task.sleep(for: .milliseconds(500))
    try await capturer.stopCapture()
    await room.disconnect()
    await receiving.disconnect()
    let arrivals = stamps.arrivals.withLock { $0 }
    for (index, time) in sent.sorted(by: { $0.key < $1.key }) {
      if let arrival = arrivals[index] { report("latency=\(index):\(milliseconds(from: time, to: arrival))") }
    }
  }

  /// Publishes the virtual camera to `port` and turns it on, with a Revue receiver on `receive`
  /// (the parent relays the packets to it); reports `publish` (monotonic ns just before
  /// `publish`) and `frame` (when the receiver had its first frame).
  private func startup() async throws {
    let stream = try BenchStream(parameters: parameters)
    let receiving = Room()
    let remote = try await receiving.listen(on: loopback(try number("receive")), codec: stream.codec)
    let stamps = StampReader()
    remote.videoTrack!.add(videoRenderer: stamps)
    let device = try await VirtualDevices.camera(profile: "csi-camera-module")
    let room = Room()
    try await room.connect(to: loopback(try number("port")))
    let participant = room.localParticipant!
    _ = try await (participant.cameraTrack.capturer as! CameraCapturer).set(
      options: CameraCaptureOptions(
        device: device, dimensions: Dimensions(width: Int32(stream.width), height: Int32(stream.height)), fps: 30))
    let published = monotonicNanoseconds()
    _ = try await participant.publish(videoTrack: participant.cameraTrack, options: options(stream))
    participant.setCamera(enabled: true)
    let first = await stamps.first()
    report("publish=\(published)")
    report("frame=\(first)")
    participant.setCamera(enabled: false)
    await room.disconnect()
    await receiving.disconnect()
  }

  /// Publishes `count` buffer tracks to `port` and up, each pushed the same 640×480 SMPTE bars
  /// frame (made by `videotestsrc`, as gst-launch's senders use) at 30 fps, until standard input closes.
  private func scale() async throws {
    let stream = try BenchStream(parameters: parameters)
    let count = try number("count")
    let frame = try await Self.testFrame(format: .i420, width: stream.width, height: stream.height)
    let room = Room()
    try await room.connect(to: loopback(try number("port")))
    var capturers: [BufferCapturer] = []
    for index in 0..<count {
      let track = LocalVideoTrack.createBufferTrack(name: "scale-\(index)")
      _ = try await room.localParticipant!.publish(videoTrack: track, options: options(stream))
      let capturer = track.capturer as! BufferCapturer
      try await capturer.startCapture()
      capturers.append(capturer)
    }
    let pushing = Task { [capturers] in
      let start = ContinuousClock.now
      var index = 0
      while !Task.isCancelled {
        index += 1
        try? await Task.sleep(until: start + .microseconds(33_333 * index), clock: .continuous)
        for capturer in capturers { capturer.capture(frame) }
      }
    }
    await Self.standardInputClosed()
    pushing.cancel()
    for capturer in capturers { try await capturer.stopCapture() }
    await room.disconnect()
  }

  /// Returns when standard input reaches its end (the parent closed it).
  static func standardInputClosed() async {
    await withCheckedContinuation { continuation in
      Thread {
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
          let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
          if count > 0 || count < 0 && errno == EINTR { continue }
          break
        }
        continuation.resume()
      }.start()
    }
  }

  /// This process's CPU seconds so far (user plus system).
  static func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
      + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
  }
}

/// Counts the frames a renderer gets and the bytes of those not in the source's memory.
final class CopyCountingRenderer: VideoRenderer {
  /// The address of the source's pixels.
  let source: Int?
  /// Frames rendered, and bytes rendered from other memory than the source's.
  let counts = Mutex((frames: 0, copiedBytes: 0))

  /// A renderer that compares with the pixels at `source`.
  init(source: UnsafeRawPointer?) { self.source = source.map { Int(bitPattern: $0) } }

  /// Counts the frame.
  func render(pixelBuffer: PixelBuffer) {
    let copied = pixelBuffer.buffer.dataAddress.map { Int(bitPattern: $0) } != source
    let size = pixelBuffer.buffer.size
    counts.withLock { $0 = ($0.frames + 1, $0.copiedBytes + (copied ? size : 0)) }
  }
}

/// Reads the ``FrameStamp`` of each frame a renderer gets, and when it came.
final class StampReader: VideoRenderer {
  /// The first arrival of each frame number, on the monotonic clock.
  let arrivals = Mutex<[Int: UInt64]>([:])
  private let firstFrame = AsyncStream<UInt64>.makeStream()

  /// Reads the frame's number.
  func render(pixelBuffer: PixelBuffer) {
    let now = monotonicNanoseconds()
    guard
      let number = try? pixelBuffer.withPlane(0, { bytes, plane in FrameStamp.bench.read(bytes, stride: plane.stride) })
    else { return }
    let isFirst = arrivals.withLock { arrivals in
      defer { if arrivals[number] == nil { arrivals[number] = now } }
      return arrivals.isEmpty
    }
    if isFirst { firstFrame.continuation.yield(now) }
  }

  /// When the first frame came (waits for it).
  func first() async -> UInt64 {
    for await time in firstFrame.stream { return time }
    return monotonicNanoseconds()
  }
}

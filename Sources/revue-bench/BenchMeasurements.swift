import Foundation
import RevueCommandLine
import RevueLab
import RevueProcess
import RevueSDK
import Synchronization

/// The measurements: one run of a scenario on one side.
extension BenchCommand {
  /// The side of an A/B pair.
  enum Side: String, Sendable {
    case revue = "Revue"
    case gstLaunch = "gst-launch"
  }

  /// What a run measures; each scenario reports some of them.
  enum Metric: Sendable, Hashable {
    /// CPU seconds (user + system) per second of video.
    case cpu
    /// Frames per second sent (RTP frames on the wire) or captured.
    case fps
    /// Peak resident memory of the process, MiB.
    case rss
    /// Peak private (anonymous resident) memory of the process, MiB.
    case privateMemory
    /// Frames decoded.
    case frames
    /// CPU microseconds per frame.
    case cpuPerFrame
    /// Bytes per frame that reached the renderer in other memory than the source's.
    case copied
    /// Bytes per frame that reached the encoder in other memory than the track's.
    case copiedToEncoder
    /// `videoconvert` elements that convert (not in passthrough) from the source to the encoder.
    case conversions
    /// Latency percentiles, ms.
    case p50, p95
    /// Frames sent that never came out of the decoder.
    case lost
    /// Start-up times, ms.
    case spawnToPacket, spawnToFrame, publishToPacket, publishToFrame
    /// Senders that kept their frame rate.
    case senders
    /// What the soak read of its sender or its receiver.
    case soak(Soak.Role, SoakReading)
    /// What the sessions scenario read of the node after each kind of client.
    case sessions(Sessions.Client, SessionsReading)
  }

  /// Frames after the first RTP packet before a live measurement starts: the encoder is warm.
  static let warmup = 15

  /// Runs `kind` once on `side`.
  func measure(_ kind: Kind, _ side: Side) async throws -> [Metric: Double] {
    switch kind {
    case .capture(let format, let rotation): try await capture(format, rotation, side)
    case .send(let stream): try await send(stream, side)
    case .receive(let stream): try await receive(stream, side)
    case .latency(let stream): try await latency(stream, side)
    case .startup(let stream): try await startup(stream, side)
    case .scale(let stream): [.senders: Double(try await largestSustained(stream, side))]
    case .render: try await render(side)
    case .soak: preconditionFailure("the soak measures both sides at once: soak(_:)")
    case .sessions: preconditionFailure("the sessions measure the node alone: sessions()")
    case .links: preconditionFailure("the links are a report of their own: links()")
    }
  }

  /// The peak memory (``Metric/rss``, ``Metric/privateMemory``), in MiB, of a process that does
  /// no work, stopped after 500 ms: a Revue child that initializes GStreamer and makes a room, and
  /// `gst-launch-1.0 fakesrc ! fakesink`; the median of 3 runs of each.
  func idleMemory() async throws -> [Side: [Metric: Double]] {
    var memory: [Side: [[Metric: Double]]] = [:]
    for _ in 0..<3 {
      for side in [Side.revue, .gstLaunch] {
        let child =
          side == .revue ? try ChildProcess.revue("idle", [:]) : try ChildProcess.gstLaunch("fakesrc ! fakesink")
        try await Task.sleep(for: .milliseconds(500))
        let exit = await child.stop()
        guard exit.succeeded else { throw failure(side, exit) }
        memory[side, default: []].append(exit.memory)
      }
    }
    return memory.mapValues { runs in
      Dictionary(
        uniqueKeysWithValues: [Metric.rss, .privateMemory].compactMap { metric in
          runs.compactMap { $0[metric] }.median.map { (metric, $0) }
        })
    }
  }

  /// The error for a child that failed.
  private func failure(_ side: Side, _ exit: ChildProcess.Exit) -> RevueError {
    RevueError(.gstreamer, "the \(side.rawValue) side failed: \(exit.error.suffix(600))")
  }

  /// Starts the Revue child of `kind` with the stream's parameters and `extra`.
  private func revueChild(
    _ kind: String, _ stream: BenchStream, _ extra: [String: Int], output: ChildProcess.Output = .collect
  ) throws -> ChildProcess {
    try ChildProcess.revue(kind, stream.parameters.merging(extra.mapValues { "\($0)" }) { $1 }, output: output)
  }

  /// Buffer capture: the Revue child's own timing of its loop; gst-launch run for N frames and
  /// for 2N, the difference being the cost of N frames without start-up.
  private func capture(_ format: PixelFormat, _ rotation: VideoRotation, _ side: Side) async throws -> [Metric: Double]
  {
    let frames = frameCount(.capture(format, rotation))
    if side == .revue {
      let child = try ChildProcess.revue(
        "capture",
        [
          "frames": "\(frames)", "format": format == .bgra ? "bgra" : "nv12",
          "rotation": "\(rotation == ._90 ? 90 : 0)",
        ])
      let exit = await child.wait()
      let results = Dictionary(exit.results, uniquingKeysWith: { $1 })
      guard exit.succeeded, let fps = results["fps"].flatMap(Double.init),
        let cpu = results["cpu"].flatMap(Double.init),
        let copied = results["copied"].flatMap(Double.init)
      else { throw failure(side, exit) }
      return [.fps: fps, .cpuPerFrame: cpu * 1000, .copied: copied].merging(exit.memory) { $1 }
    }
    let source = BenchStream.testFrame(format: format, width: 1920, height: 1080)
    let work =
      format == .bgra
      ? "videoconvert ! video/x-raw,format=NV12 ! " : rotation == ._90 ? "videoflip video-direction=90r ! " : ""
    // N and 2N frames; N grows tenfold until the difference is long enough to time (NV12 to a
    // fakesink is too fast to time at a few hundred frames).
    var count = frames
    while true {
      var runs: [(seconds: Double, exit: ChildProcess.Exit)] = []
      for frames in [count, 2 * count] {
        let child = try ChildProcess.gstLaunch(
          "\(source) ! imagefreeze num-buffers=\(frames) ! \(work)fakesink sync=false")
        let exit = await child.wait()
        guard exit.succeeded else { throw failure(side, exit) }
        runs.append((Double((exit.ended ?? child.started) - child.started) / 1e9, exit))
      }
      let seconds = runs[1].seconds - runs[0].seconds
      if seconds < 0.3 && count < 1000 * frames {
        count *= 10
        continue
      }
      return [
        .fps: Double(count) / seconds,
        .cpuPerFrame: (runs[1].exit.cpuSeconds - runs[0].exit.cpuSeconds) * 1e6 / Double(count),
      ].merging(runs[1].exit.memory) { $1 }
    }
  }

  /// Rendering: one pushed 1920×1080 I420 frame (as decoders give) shown 30 times a second in a 1920×1080 X11
  /// window, N and 2N times; the difference of the two runs' CPU time is the cost of N frames
  /// shown, without start-up. The Revue child shows a buffer track in a `VideoView`; gst-launch
  /// shows the frame with `videoconvert ! ximagesink` (`xvimagesink` where the server has XVideo;
  /// Xvfb has not). On `DISPLAY`, or on an Xvfb of the bench's own when there is none.
  private func render(_ side: Side) async throws -> [Metric: Double] {
    let frames = frameCount(.render)
    let display = try await BenchDisplay.start()
    defer { display?.stop() }
    let sink = await BenchDisplay.gstLaunchSink()
    let stream = BenchStream(codec: .vp8, width: 1920, height: 1080)
    var runs: [ChildProcess.Exit] = []
    var copied: Double?
    for count in [frames, 2 * frames] {
      let child =
        side == .revue
        ? try ChildProcess.revue("render", ["frames": "\(count)"])
        : try ChildProcess.gstLaunch(
          "\(stream.repeatedFrame(.i420, frames: count)) ! videoconvert ! \(sink)")
      let exit = await child.wait(stoppingAfter: Double(count) / 30 + 15)
      guard exit.succeeded else { throw failure(side, exit) }
      if side == .revue {
        let results = Dictionary(exit.results, uniquingKeysWith: { $1 })
        guard results["shown"] == "true", let bytes = results["copied"].flatMap(Double.init), bytes >= 0 else {
          throw RevueError(.gstreamer, "the Revue side showed no frame: \(results) \(exit.error.suffix(600))")
        }
        copied = bytes
      }
      runs.append(exit)
    }
    var metrics = [Metric.cpuPerFrame: (runs[1].cpuSeconds - runs[0].cpuSeconds) * 1e6 / Double(frames)]
      .merging(runs[1].memory) { $1 }
    metrics[.copied] = copied
    return metrics
  }

  /// Sending: the child sends `frames` frames to a sink of the bench; measured from the
  /// ``warmup``-th frame on the wire to the child's exit.
  private func send(_ stream: BenchStream, _ side: Side) async throws -> [Metric: Double] {
    let frames = frameCount(.send(stream))
    let sink = try PacketSink()
    defer { sink.stop() }
    let child =
      side == .revue
      ? try revueChild("send", stream, ["frames": frames, "port": sink.port])
      : try ChildProcess.gstLaunch("\(stream.source(frames: frames)) ! \(stream.sendTail(port: sink.port))")
    let ended = Task {
      let exit = await child.wait(stoppingAfter: Double(frames) / 30 + 10)
      sink.giveUp()
      return exit
    }
    let warm = await sink.waitForFrames(Self.warmup)
    let (cpuAtWarm, warmSampled) = (child.cpuSeconds, monotonicNanoseconds())
    // The window ends a few frames before the last (both sides get there at full rate), so that
    // neither side's tear-down nor a late end of stream counts.
    let last = await sink.waitForFrames(frames - 5)
    let (cpuAtLast, sampled) = (child.cpuSeconds, monotonicNanoseconds())
    child.terminate()
    let exit = await ended.value
    guard exit.succeeded else { throw failure(side, exit) }
    guard let warm, let cpuAtWarm, let last, let cpuAtLast, last > warm else {
      throw RevueError(.gstreamer, "the \(side.rawValue) side sent fewer than \(frames - 5) frames")
    }
    let sent = sink.all[0].frames.filter { $0 > warm && $0 <= last }
    let cpu = (cpuAtLast - cpuAtWarm) / (Double(sampled - warmSampled) / 1e9)
    let fps = Double(sent.count) / (Double(last - warm) / 1e9)
    var metrics = exit.memory.merging([.cpu: cpu, .fps: fps, .cpuPerFrame: cpu / fps * 1e6]) { $1 }
    if side == .revue, stream.source.pushedFormat != nil {
      guard let copied = exit.results.last(where: { $0.key == "copied" }).flatMap({ Double($0.value) }) else {
        throw failure(side, exit)
      }
      metrics[.copiedToEncoder] = copied
    }
    if side == .revue {
      guard let conversions = exit.results.last(where: { $0.key == "conversions" }).flatMap({ Double($0.value) })
      else { throw failure(side, exit) }
      metrics[.conversions] = conversions
    } else {
      metrics[.conversions] = Double(try await Self.conversions(of: stream))
    }
    return metrics
  }

  /// The `videoconvert` elements of gst-launch's sender for `stream` that convert, counted in a
  /// short run of its own (not the measured one): gst-launch's `-v` prints each pad's caps, and
  /// one in passthrough has the same caps on both pads.
  static func conversions(of stream: BenchStream) async throws -> Int {
    let child = try ChildProcess.gstLaunch(
      "\(stream.source(frames: 10)) ! \(stream.sendTail(port: 9))", verbose: true, output: .collect)
    let exit = await child.wait(stoppingAfter: 10)
    guard exit.succeeded else {
      throw RevueError(.gstreamer, "gst-launch's conversion count failed: \(exit.error.suffix(600))")
    }
    return convertingElements(inVerboseOutput: exit.output)
  }

  /// How many `GstVideoConvert` elements `gst-launch-1.0 -v` output shows with other caps on
  /// their source pad than on their sink pad (the last caps of each pad).
  static func convertingElements(inVerboseOutput output: String) -> Int {
    var caps: [String: [String: String]] = [:]  // element path → pad → caps
    for line in output.split(separator: "\n") where line.contains("GstVideoConvert:") {
      guard let padRange = line.range(of: ".GstPad:"), let capsRange = line.range(of: ": caps = ") else { continue }
      let element = String(line[..<padRange.lowerBound])
      let pad = String(line[padRange.upperBound..<capsRange.lowerBound])
      caps[element, default: [:]][pad] = String(line[capsRange.upperBound...])
    }
    return caps.values.filter { pads in
      guard let sink = pads["sink"], let source = pads["src"] else { return false }
      return sink != source
    }.count
  }

  /// Receiving: the same gst-launch sender (not measured) streams `frames` frames to the
  /// receiver child; measured from the sender's start to 300 ms after its end.
  private func receive(_ stream: BenchStream, _ side: Side) async throws -> [Metric: Double] {
    let frames = frameCount(.receive(stream))
    let port = try PacketSink.freePort()
    let receiver =
      side == .revue
      ? try revueChild("receive", stream, ["port": port])
      : try ChildProcess.gstLaunch(
        stream.receive(port: port, sink: "fakesink sync=false silent=false"), verbose: true, output: .collect)
    try await Task.sleep(for: .milliseconds(700))  // the same time for both to start listening
    let cpuBefore = receiver.cpuSeconds
    let sender = try ChildProcess.gstLaunch("\(stream.source(frames: frames)) ! \(stream.sendTail(port: port))")
    let sent = await sender.wait(stoppingAfter: Double(frames) / 30 + 3)
    guard sent.succeeded else { throw failure(.gstLaunch, sent) }
    try await Task.sleep(for: .milliseconds(300))
    let cpuAfter = receiver.cpuSeconds
    let exit = await receiver.stop()
    guard exit.succeeded, let cpuBefore, let cpuAfter else { throw failure(side, exit) }
    let decoded =
      side == .revue
      ? exit.results.last { $0.key == "frames" }.flatMap { Double($0.value) } ?? 0
      : Double(exit.output.components(separatedBy: "last-message = chain").count - 1)
    return exit.memory.merging([.cpu: (cpuAfter - cpuBefore) / (Double(frames) / 30), .frames: decoded]) { $1 }
  }

  /// Glass-to-glass: latencies of the stamped frames after the first 30.
  private func latency(_ stream: BenchStream, _ side: Side) async throws -> [Metric: Double] {
    let frames = frameCount(.latency(stream))
    let port = try PacketSink.freePort()
    var latencies: [Int: Double] = [:]
    if side == .revue {
      let child = try revueChild("latency", stream, ["frames": frames, "port": port])
      let exit = await child.wait()
      guard exit.succeeded else { throw failure(side, exit) }
      for (key, value) in exit.results where key == "latency" {
        let parts = value.split(separator: ":")
        if parts.count == 2, let index = Int(parts[0]), let milliseconds = Double(parts[1]) {
          latencies[index] = milliseconds
        }
      }
    } else {
      latencies = try await gstLatency(stream, frames: frames, port: port)
    }
    let measured = latencies.filter { $0.key >= 30 }.map(\.value)
    guard let p50 = measured.percentile(0.5), let p95 = measured.percentile(0.95) else {
      throw RevueError(.gstreamer, "the \(side.rawValue) side decoded no stamped frame")
    }
    return [.p50: p50, .p95: p95, .lost: Double(frames - 30 - measured.count)]
  }

  /// The gst-launch pair of the latency scenario: the bench writes the stamped raw frames into
  /// `fdsrc` of a sender and reads the decoded raw frames from `fdsink` of a receiver.
  private func gstLatency(_ stream: BenchStream, frames: Int, port: Int) async throws -> [Int: Double] {
    let size = stream.i420Size
    let receiver = try ChildProcess.gstLaunch(stream.receive(port: port, sink: "fdsink fd=1 sync=false"), output: .pipe)
    let descriptor = receiver.outputDescriptor
    let reading = Task {
      await onThread { () -> [Int: UInt64] in
        var arrivals: [Int: UInt64] = [:]
        var frame = [UInt8](repeating: 0, count: size)
        while frame.withUnsafeMutableBytes({ readFully(descriptor, $0) }) {
          let now = monotonicNanoseconds()
          let number = frame.withUnsafeBytes { FrameStamp.bench.read($0, stride: stream.width) }
          if arrivals[number] == nil { arrivals[number] = now }
        }
        return arrivals
      }
    }
    try await Task.sleep(for: .milliseconds(700))
    let sender = try ChildProcess.gstLaunch(
      "fdsrc fd=0 blocksize=\(size) ! rawvideoparse format=i420 width=\(stream.width) height=\(stream.height)"
        + " framerate=30/1 ! \(stream.sendTail(port: port))")
    try await Task.sleep(for: .milliseconds(300))
    let input = sender.inputDescriptor
    let sent = await onThread { () -> [Int: UInt64] in
      var pixels = FrameStamp.blankI420(width: stream.width, height: stream.height)
      var sent: [Int: UInt64] = [:]
      let start = monotonicNanoseconds()
      for index in 0..<frames {
        let due = start + UInt64(index) * 33_333_333
        let now = monotonicNanoseconds()
        if due > now { usleep(UInt32((due - now) / 1000)) }
        FrameStamp.bench.write(index, into: &pixels, width: stream.width)
        sent[index] = monotonicNanoseconds()
        guard pixels.withUnsafeBytes({ writeFully(input, $0) }) else { break }
      }
      return sent
    }
    sender.closeInput()
    let senderExit = await sender.wait(stoppingAfter: 3)
    try await Task.sleep(for: .milliseconds(500))
    let exit = await receiver.stop()
    let arrivals = await reading.value
    guard senderExit.succeeded, exit.succeeded else {
      throw failure(.gstLaunch, senderExit.succeeded ? exit : senderExit)
    }
    var latencies: [Int: Double] = [:]
    for (index, time) in sent {
      if let arrival = arrivals[index] { latencies[index] = milliseconds(from: time, to: arrival) }
    }
    return latencies
  }

  /// Start-up: Revue from `publish` (then `setCamera(enabled: true)`) to the first datagram at
  /// the bench's socket and to the first frame at a Revue receiver the socket relays to; both
  /// sides from the sender's spawn to the first datagram and to the first frame decoded by a
  /// receiver of their own (Revue's in the sending process, gst-launch's in a second one).
  private func startup(_ stream: BenchStream, _ side: Side) async throws -> [Metric: Double] {
    if side == .revue {
      let receivePort = try PacketSink.freePort()
      let sink = try PacketSink(relay: receivePort)
      defer { sink.stop() }
      let child = try revueChild("startup", stream, ["port": sink.port, "receive": receivePort])
      let exit = await child.wait()
      let results = Dictionary(exit.results, uniquingKeysWith: { $1 })
      guard exit.succeeded, let published = results["publish"].flatMap(UInt64.init),
        let frame = results["frame"].flatMap(UInt64.init), let first = sink.all[0].first
      else { throw failure(side, exit) }
      return [
        .spawnToPacket: milliseconds(from: child.started, to: first),
        .spawnToFrame: milliseconds(from: child.started, to: frame),
        .publishToPacket: milliseconds(from: published, to: first),
        .publishToFrame: milliseconds(from: published, to: frame),
      ]
    }
    // A gst-launch receiver, listening before the sender starts, writes its decoded frames to a
    // pipe: the first whole frame read is the first decoded.
    let receivePort = try PacketSink.freePort()
    let receiver = try ChildProcess.gstLaunch(
      stream.receive(port: receivePort, sink: "fdsink fd=1 sync=false"), output: .pipe)
    let (descriptor, size) = (receiver.outputDescriptor, stream.i420Size)
    let firstFrame = Task {
      await onThread { () -> UInt64? in
        var frame = [UInt8](repeating: 0, count: size)
        return frame.withUnsafeMutableBytes { readFully(descriptor, $0) } ? monotonicNanoseconds() : nil
      }
    }
    try await Task.sleep(for: .milliseconds(700))  // the receiver listens
    let sink = try PacketSink(relay: receivePort)
    defer { sink.stop() }
    let child = try ChildProcess.gstLaunch("\(stream.source(frames: 300)) ! \(stream.sendTail(port: sink.port))")
    let ended = Task {
      let exit = await child.wait()
      sink.giveUp()
      receiver.terminate()  // no frame came: the pipe ends
      return exit
    }
    _ = await sink.waitForFrames(1)
    let frame = await firstFrame.value
    child.terminate()
    receiver.terminate()
    let (exit, receiverExit) = (await ended.value, await receiver.wait())
    guard exit.succeeded, receiverExit.succeeded, let first = sink.all[0].first, let frame else {
      throw failure(side, exit.succeeded ? receiverExit : exit)
    }
    return [
      .spawnToPacket: milliseconds(from: child.started, to: first),
      .spawnToFrame: milliseconds(from: child.started, to: frame),
    ]
  }

  /// The most senders of `stream` that all keep 95% of 30 fps over 3 s: doubling from 1 until one
  /// count fails, then bisecting.
  private func largestSustained(_ stream: BenchStream, _ side: Side) async throws -> Int {
    var (good, bad) = (0, Int?.none)
    var count = 1
    while bad == nil && count <= 64 {
      if try await sustains(stream, count: count, side) { (good, count) = (count, count * 2) } else { bad = count }
    }
    guard var high = bad else { return good }
    while high - good > 1 {
      let middle = (good + high) / 2
      if try await sustains(stream, count: middle, side) { good = middle } else { high = middle }
    }
    return good
  }

  /// Whether `count` senders (one Revue process with `count` publications, or `count` gst-launch
  /// processes: what a user of gst-launch runs) all keep 28.5 fps for 3 s.
  private func sustains(_ stream: BenchStream, count: Int, _ side: Side) async throws -> Bool {
    let sink = try PacketSink(count: count)
    defer { sink.stop() }
    let source = stream.repeatedFrame(.i420)
    let children =
      side == .revue
      ? [try revueChild("scale", stream, ["count": count, "port": sink.port], output: .discard)]
      : try (0..<count).map { try ChildProcess.gstLaunch("\(source) ! \(stream.sendTail(port: sink.port + 2 * $0))") }
    let timeout = Task {
      try? await Task.sleep(for: .seconds(10))
      sink.giveUp()
    }
    let warm = await sink.waitForFrames(Self.warmup)
    timeout.cancel()
    let start = monotonicNanoseconds()
    if warm != nil { try await Task.sleep(for: .seconds(3)) }
    let end = monotonicNanoseconds()
    for child in children { child.terminate() }
    for child in children {
      let exit = await child.wait()
      guard exit.succeeded else { throw failure(side, exit) }
    }
    guard warm != nil else { return false }
    let slowest = sink.all.map { counts in counts.frames.filter { $0 > start && $0 <= end }.count }.min() ?? 0
    let fps = Double(slowest) / (Double(end - start) / 1e9)
    print(
      "  \(side.rawValue) (vp8enc threads=\(stream.encoderThreads)): \(count) senders, the slowest at "
        + "\(String(format: "%.1f", fps)) fps")
    return fps >= 28.5
  }
}

extension ChildProcess.Exit {
  /// The child's peak resident and private memory.
  var memory: [BenchCommand.Metric: Double] {
    [.rss: Double(peakResidentKiB ?? 0) / 1024, .privateMemory: Double(peakPrivateKiB ?? 0) / 1024]
  }
}

/// Reads exactly `buffer.count` bytes; false at the end of the stream first.
func readFully(_ descriptor: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Bool {
  moveFully(buffer.count) { done, left in read(descriptor, buffer.baseAddress! + done, left) }
}

/// Writes all of `bytes`; false when the reader is gone.
func writeFully(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
  moveFully(bytes.count) { done, left in write(descriptor, bytes.baseAddress! + done, left) }
}

/// Calls `move(done, left)` (a read or a write of `left` bytes at offset `done`) until `count`
/// bytes are moved, again after an interruption; false when it moves nothing or fails first.
private func moveFully(_ count: Int, _ move: (Int, Int) -> Int) -> Bool {
  var done = 0
  while done < count {
    let moved = move(done, count - done)
    if moved > 0 {
      done += moved
    } else if moved == 0 || errno != EINTR {
      return false
    }
  }
  return true
}

import Foundation
import RevueSDK
import Synchronization

/// `revue bench`: the SDK's work measured side by side with the same GStreamer elements driven
/// by `gst-launch-1.0`, in the same run, alternating A/B so that machine noise hits both.
struct BenchCommand {
  /// One measured scenario.
  enum Scenario: String, CaseIterable {
    /// 1920×1080 NV12 frames through `BufferCapturer.capture(_:)` to a renderer, no processor.
    case captureNV12 = "capture-nv12"
    /// 1920×1080 BGRA frames converted to NV12 by the capturer.
    case captureBGRA = "capture-bgra"
    /// 1920×1080 NV12 frames turned by 90° by the capturer.
    case captureRotate90 = "capture-rotate90"
    /// The virtual camera's MJPEG 1280×720 at 30 fps, decoded, to a renderer (live: real time).
    case cameraMJPEG = "camera-mjpeg"
    /// A 1280×720@30 test source published with VP8 over RTP to loopback.
    case sendVP8 = "send-vp8-720p"
    /// A 1280×720@30 test source published with H.264 over RTP to loopback.
    case sendH264 = "send-h264-720p"

    /// The codec of a send scenario.
    var sendCodec: VideoCodec? {
      switch self {
      case .sendVP8: .vp8
      case .sendH264: .h264
      default: nil
      }
    }

    /// Whether the scenario runs in real time (a live source at 30 fps).
    var isLive: Bool { self == .cameraMJPEG || sendCodec != nil }

    /// What the scenario measures, for the report.
    var title: String {
      switch self {
      case .captureNV12: "1080p NV12 → renderer (no copy)"
      case .captureBGRA: "1080p BGRA → NV12"
      case .captureRotate90: "1080p NV12 turned 90°"
      case .cameraMJPEG: "camera MJPEG 720p30 → renderer"
      case .sendVP8: "send 720p30 VP8 → RTP"
      case .sendH264: "send 720p30 H.264 → RTP"
      }
    }

    /// The equivalent gst-launch pipeline, or nil when only Revue is measured.
    func gstLaunch(frames: Int) -> [String]? {
      let source = "videotestsrc num-buffers=1 ! video/x-raw,width=1920,height=1080,framerate=30/1"
      switch self {
      case .captureNV12: return nil
      case .captureBGRA:
        return
          "\(source),format=BGRA ! imagefreeze num-buffers=\(frames) ! videoconvert ! video/x-raw,format=NV12 ! fakesink sync=false"
          .split(separator: " ").map(String.init)
      case .captureRotate90:
        return
          "\(source),format=NV12 ! imagefreeze num-buffers=\(frames) ! videoflip video-direction=90r ! fakesink sync=false"
          .split(separator: " ").map(String.init)
      case .cameraMJPEG:
        // The virtual camera's own chain, then what a camera pipeline of gst-launch does with it.
        return
          ("videotestsrc is-live=true num-buffers=\(frames) ! video/x-raw,format=I420,width=1280,height=720,framerate=30/1"
          + " ! jpegenc ! image/jpeg,width=1280,height=720,framerate=30/1 ! jpegdec ! videoconvert ! fakesink sync=false")
          .split(separator: " ").map(String.init)
      case .sendVP8, .sendH264:
        // The same source, conversion, encoder settings and rtpbin as the SDK's send pipeline.
        let encoder =
          self == .sendVP8
          ? "vp8enc deadline=1 cpu-used=8 end-usage=cbr target-bitrate=1500000 keyframe-max-dist=60 lag-in-frames=0"
            + " error-resilient=default threads=2 ! rtpvp8pay picture-id-mode=15-bit"
          : "x264enc tune=zerolatency speed-preset=ultrafast bitrate=1500 key-int-max=60"
            + " ! video/x-h264,profile=constrained-baseline ! h264parse ! rtph264pay config-interval=-1 aggregate-mode=zero-latency"
        return
          ("videotestsrc is-live=true num-buffers=\(frames) ! video/x-raw,format=NV12,width=1280,height=720,framerate=30/1"
          + " ! queue max-size-buffers=2 leaky=downstream ! videoconvert ! video/x-raw,format=I420 ! \(encoder)"
          + " pt=96 mtu=1200 ! rtpbin.send_rtp_sink_0 rtpbin name=rtpbin rtp-profile=avpf"
          + " rtpbin.send_rtp_src_0 ! udpsink host=127.0.0.1 port=9 sync=false async=false")
          .split(separator: " ").map(String.init)
      }
    }
  }

  /// The scenarios to run (all when empty).
  var scenarios: [Scenario]
  /// Frames per run.
  var frames: Int
  /// Runs of each side.
  var runs: Int
  /// Where to write the report as JSON, if anywhere.
  var jsonPath: String?
  /// Where to write the report as a Markdown table, if anywhere.
  var markdownPath: String?

  /// One side's measurement.
  struct Measurement {
    var framesPerSecond: Double
    var cpuMillisecondsPerFrame: Double
  }

  func run() async throws {
    #if DEBUG
      FileHandle.standardError.write(
        Data("revue bench: this is a debug build; run `swift run -c release revue bench` for real numbers\n".utf8))
    #endif
    var rows: [[String: Any]] = []
    var table: [ReportRow] = []
    print(
      "scenario                          revue fps  gst-launch fps  ratio  revue CPU ms/frame  gst-launch CPU ms/frame")
    for scenario in scenarios.isEmpty ? Scenario.allCases : scenarios {
      var revue: [Measurement] = []
      var reference: [Measurement] = []
      var copies = 0
      var firstFrames: [Double] = []
      for _ in 0..<runs {
        if let codec = scenario.sendCodec {
          revue.append(try await measureSend(codec))
          reference.append(try measureGstLaunch(scenario.gstLaunch(frames: frames)!))
          continue
        }
        if scenario == .cameraMJPEG {
          let (measurement, firstFrame) = try await measureCamera()
          revue.append(measurement)
          firstFrames.append(firstFrame)
          reference.append(try measureGstLaunch(scenario.gstLaunch(frames: frames)!))
          continue
        }
        let (measurement, copied) = try await measureRevue(scenario)
        revue.append(measurement)
        copies += copied
        if let arguments = scenario.gstLaunch(frames: frames) { reference.append(try measureGstLaunch(arguments)) }
      }
      let ours = median(revue)
      let theirs = reference.isEmpty ? nil : median(reference)
      let ratio = theirs.map { ours.framesPerSecond / $0.framesPerSecond }
      print(
        scenario.title.padding(toLength: 32, withPad: " ", startingAt: 0), format(ours.framesPerSecond, 10),
        format(theirs?.framesPerSecond, 15), format(ratio, 6, digits: 2),
        format(ours.cpuMillisecondsPerFrame, 19, digits: 2),
        format(theirs?.cpuMillisecondsPerFrame, 24, digits: 2))
      if scenario.isLive {
        table.append(
          ReportRow(
            scenario: scenario.title, revue: ours.cpuMillisecondsPerFrame * 30 / 1000,
            gstLaunch: theirs.map { $0.cpuMillisecondsPerFrame * 30 / 1000 },
            unit: "CPU s per s of video (lower is better)",
            digits: 3))
      } else {
        table.append(
          ReportRow(
            scenario: scenario.title, revue: ours.framesPerSecond, gstLaunch: theirs?.framesPerSecond,
            unit: "frames per second (higher is better)", digits: 0))
      }
      if scenario == .captureNV12 {
        print("  frames whose pixels were copied on the way to the renderer: \(copies) of \(frames * runs)")
        table.append(
          ReportRow(
            scenario: "\(scenario.title): frames copied", revue: Double(copies), gstLaunch: nil,
            unit: "of \(frames * runs) frames", digits: 0))
      }
      if scenario.isLive {
        let perSecond = { (measurement: Measurement) in measurement.cpuMillisecondsPerFrame * 30 / 1000 }
        let cpuRatio = theirs.map { ours.cpuMillisecondsPerFrame / $0.cpuMillisecondsPerFrame }
        print(
          "  CPU seconds per second of video: revue \(format(perSecond(ours), 0, digits: 3)), gst-launch "
            + "\(format(theirs.map(perSecond), 0, digits: 3)), ratio \(format(cpuRatio, 0, digits: 3)) (target ≤ 1.05)")
      }
      if scenario == .cameraMJPEG {
        print(
          "  first frame after setCamera(enabled: true): \(format(firstFrames.sorted()[firstFrames.count / 2], 0)) ms (median; 100 ms of it is the switch's debounce)"
        )
      }
      var row: [String: Any] = [
        "scenario": scenario.rawValue, "revueFramesPerSecond": ours.framesPerSecond,
        "revueCPUMillisecondsPerFrame": ours.cpuMillisecondsPerFrame,
      ]
      if let theirs, let ratio {
        row["gstLaunchFramesPerSecond"] = theirs.framesPerSecond
        row["gstLaunchCPUMillisecondsPerFrame"] = theirs.cpuMillisecondsPerFrame
        row["ratio"] = ratio
      }
      if scenario == .captureNV12 { row["framesCopied"] = copies }
      if scenario == .cameraMJPEG {
        row["firstFrameMilliseconds"] = firstFrames.sorted()[firstFrames.count / 2]
        table.append(
          ReportRow(
            scenario: "camera: setCamera(enabled: true) → first frame",
            revue: firstFrames.sorted()[firstFrames.count / 2],
            gstLaunch: nil, unit: "ms (100 of them the switch's debounce)", digits: 0))
      }
      rows.append(row)
    }
    if let markdownPath {
      try markdown(table).write(toFile: markdownPath, atomically: true, encoding: .utf8)
    }
    if let jsonPath {
      let data = try JSONSerialization.data(
        withJSONObject: ["frames": frames, "runs": runs, "results": rows], options: [.prettyPrinted, .sortedKeys])
      try data.write(to: URL(fileURLWithPath: jsonPath))
    }
  }

  /// One line of the report.
  struct ReportRow {
    var scenario: String
    var revue: Double
    var gstLaunch: Double?
    var unit: String
    var digits: Int
  }

  /// The report as Markdown: the machine, then the table.
  private func markdown(_ rows: [ReportRow]) -> String {
    let cpu =
      (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n")
      .first { $0.hasPrefix("model name") }.map {
        $0.split(separator: ":", maxSplits: 1).last!.trimmingCharacters(in: .whitespaces)
      }
      ?? "unknown CPU"
    var name = utsname()
    uname(&name)
    let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let memory = ProcessInfo.processInfo.physicalMemory / (1 << 30)
    var lines = [
      "# Benchmarks", "",
      "`swift run -c release revue bench --runs \(runs) --frames \(frames) --markdown \(markdownPath ?? "FILE")`, "
        + "each scenario run A/B against the same elements in `gst-launch-1.0`; medians of \(runs) runs.", "",
      "Machine: \(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(memory) GiB, Linux \(kernel), "
        + "GStreamer \(NodeElements.gstreamerVersion). Run on \(ISO8601DateFormatter().string(from: Date())).", "",
      "| scenario | Revue | gst-launch | ratio | unit |", "|---|---:|---:|---:|---|",
    ]
    for row in rows {
      let ours = String(format: "%.\(row.digits)f", row.revue)
      let theirs = row.gstLaunch.map { String(format: "%.\(row.digits)f", $0) } ?? "—"
      let ratio = row.gstLaunch.map { String(format: "%.2f", row.revue / $0) } ?? "—"
      lines.append("| \(row.scenario) | \(ours) | \(theirs) | \(ratio) | \(row.unit) |")
    }
    return lines.joined(separator: "\n") + "\n"
  }

  /// Counts the frames a renderer gets, and those whose pixels are not the source's.
  private final class CountingRenderer: VideoRenderer {
    /// The address of the source's pixels, nil when a conversion is expected to make new ones.
    let source: Int?
    let counts = Mutex((frames: 0, copied: 0))
    init(source: UnsafeRawPointer?) { self.source = source.map { Int(bitPattern: $0) } }
    func render(pixelBuffer: PixelBuffer) {
      let copied = source != nil && pixelBuffer.buffer.dataAddress.map { Int(bitPattern: $0) } != source
      counts.withLock { $0 = ($0.frames + 1, $0.copied + (copied ? 1 : 0)) }
    }
  }

  /// Pushes `frames` frames through a buffer track and returns the rate, the CPU per frame, and
  /// how many frames reached the renderer with other pixels than the source's (NV12 only).
  private func measureRevue(_ scenario: Scenario) async throws -> (Measurement, Int) {
    let format: PixelFormat = scenario == .captureBGRA ? .bgra : .nv12
    let size = format == .bgra ? 1920 * 1080 * 4 : 1920 * 1080 * 3 / 2
    let frame = try PixelBuffer(
      width: 1920, height: 1080, format: format, bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 / 7) })
    let rotation: VideoRotation = scenario == .captureRotate90 ? ._90 : ._0
    let track = LocalVideoTrack.createBufferTrack(name: "bench")
    let capturer = track.capturer as! BufferCapturer
    let renderer = CountingRenderer(source: scenario == .captureNV12 ? frame.buffer.dataAddress : nil)
    track.add(videoRenderer: renderer)
    try await capturer.startCapture()
    capturer.capture(frame, timeStampNs: 0, rotation: rotation)  // builds the conversion before timing
    let (cpuBefore, start) = (Self.cpuSeconds(RUSAGE_SELF), Date())
    for _ in 0..<frames { capturer.capture(frame, timeStampNs: 0, rotation: rotation) }
    let elapsed = Date().timeIntervalSince(start)
    let cpu = Self.cpuSeconds(RUSAGE_SELF) - cpuBefore
    try await capturer.stopCapture()
    let counts = renderer.counts.withLock { $0 }
    guard counts.frames == frames + 1 else {
      throw RevueError(.gstreamer, "only \(counts.frames) of \(frames + 1) frames reached the renderer")
    }
    return (
      Measurement(framesPerSecond: Double(frames) / elapsed, cpuMillisecondsPerFrame: cpu * 1000 / Double(frames)),
      counts.copied
    )
  }

  /// Turns the virtual camera on through the participant's switch and counts `frames` frames at
  /// a renderer: the rate, the CPU per frame, and the milliseconds to the first frame.
  private func measureCamera() async throws -> (Measurement, Double) {
    let device = try await VirtualDevices.camera(profile: VirtualDevices.defaultProfile)
    let participant = Room().localParticipant!
    let capturer = participant.cameraTrack.capturer as! CameraCapturer
    _ = try await capturer.set(options: CameraCaptureOptions(device: device, dimensions: .h720_169, fps: 30))
    let counter = FrameCounter(until: frames + 1)
    participant.cameraTrack.add(videoRenderer: counter)
    let switchedOn = ContinuousClock.now
    participant.setCamera(enabled: true)
    let first = await counter.waitForFirst()
    let (cpuBefore, start) = (Self.cpuSeconds(RUSAGE_SELF), Date())
    await counter.waitForAll()
    let elapsed = Date().timeIntervalSince(start)
    let cpu = Self.cpuSeconds(RUSAGE_SELF) - cpuBefore
    try await capturer.stopCapture()
    guard capturer.format?.encoding == .jpeg || capturer.format == nil else {
      throw RevueError(.invalidState, "the camera did not use MJPEG")
    }
    let toFirst = first - switchedOn
    return (
      Measurement(framesPerSecond: Double(frames) / elapsed, cpuMillisecondsPerFrame: cpu * 1000 / Double(frames)),
      Double(toFirst.components.seconds) * 1000 + Double(toFirst.components.attoseconds) / 1e15
    )
  }

  /// Publishes the virtual camera module's raw 1280×720@30 with `codec` to a closed loopback port
  /// and counts `frames` encoded frames: the rate and the CPU per frame.
  private func measureSend(_ codec: VideoCodec) async throws -> Measurement {
    let device = try await VirtualDevices.camera(profile: "csi-camera-module")
    let room = Room()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(2 * Int.random(in: 15_000..<30_000))")!)
    let participant = room.localParticipant!
    let capturer = participant.cameraTrack.capturer as! CameraCapturer
    _ = try await capturer.set(options: CameraCaptureOptions(device: device, dimensions: .h720_169, fps: 30))
    let publication = try await participant.publish(
      videoTrack: participant.cameraTrack,
      options: VideoPublishOptions(encoding: VideoEncoding(maxBitrate: 1_500_000, maxFps: 30), preferredCodec: codec))
    let counter = FrameCounter(until: frames + 1)
    participant.cameraTrack.add(videoRenderer: counter)
    try await capturer.startCapture()
    _ = await counter.waitForFirst()
    let (cpuBefore, start) = (Self.cpuSeconds(RUSAGE_SELF), Date())
    await counter.waitForAll()
    let elapsed = Date().timeIntervalSince(start)
    let cpu = Self.cpuSeconds(RUSAGE_SELF) - cpuBefore
    let encoded = publication.statistics.framesEncoded
    try await capturer.stopCapture()
    await room.disconnect()
    guard encoded >= frames * 9 / 10 else {
      throw RevueError(.gstreamer, "only \(encoded) of \(frames) frames were encoded")
    }
    print("  \(codec): \(encoded) frames encoded while \(frames + 1) were captured")
    return Measurement(framesPerSecond: Double(frames) / elapsed, cpuMillisecondsPerFrame: cpu * 1000 / Double(frames))
  }

  /// Runs gst-launch-1.0 and returns its rate and CPU per frame.
  private func measureGstLaunch(_ arguments: [String]) throws -> Measurement {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
    process.arguments = ["-q"] + arguments
    let cpuBefore = Self.cpuSeconds(RUSAGE_CHILDREN)
    let start = Date()
    try process.run()
    process.waitUntilExit()
    let elapsed = Date().timeIntervalSince(start)
    guard process.terminationStatus == 0 else {
      throw RevueError(.gstreamer, "gst-launch-1.0 \(arguments.joined(separator: " ")) failed")
    }
    let cpu = Self.cpuSeconds(RUSAGE_CHILDREN) - cpuBefore
    return Measurement(framesPerSecond: Double(frames) / elapsed, cpuMillisecondsPerFrame: cpu * 1000 / Double(frames))
  }

  private static func cpuSeconds(_ who: __rusage_who) -> Double {
    let who = __rusage_who_t(who.rawValue)
    var usage = rusage()
    getrusage(who, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
      usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
  }

  private func median(_ values: [Measurement]) -> Measurement {
    let fps = values.map(\.framesPerSecond).sorted()
    let cpu = values.map(\.cpuMillisecondsPerFrame).sorted()
    return Measurement(framesPerSecond: fps[fps.count / 2], cpuMillisecondsPerFrame: cpu[cpu.count / 2])
  }

  private func format(_ value: Double?, _ width: Int, digits: Int = 0) -> String {
    let text = value.map { String(format: "%.\(digits)f", $0) } ?? "—"
    return String(repeating: " ", count: max(0, width - text.count)) + text
  }
}

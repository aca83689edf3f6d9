import Foundation
import RevueProcess
import RevueSDK

extension BenchCommand {
  /// The soak: a sender and a receiver left running, their memory, threads and file descriptors
  /// read every second. Revue's pair is `revue stream` and `revue receive`, the commands a node
  /// runs; gst-launch's pair, run beside it at the same time, is the send and receive pipelines
  /// of the other scenarios. What counts is the growth after the warm-up: pools, caches and
  /// sockets are made in the first seconds, and after that a node that runs for a month must
  /// hold what it held.
  struct Soak: Sendable {
    /// One of the two processes of a pair.
    enum Role: String, Sendable, Hashable, CaseIterable {
      case sender, receiver
    }

    /// What a process held at the three moments that count, and what it did.
    struct Readings: Sendable {
      /// One second after the senders started.
      var start: ChildProcess.Reading
      /// At the end of the warm-up.
      var warm: ChildProcess.Reading
      /// At the end.
      var end: ChildProcess.Reading
      /// Frames the process sent or decoded, when it says.
      var frames: Int?
      /// Resident memory read every second from the warm-up to the end, KiB.
      var residentAfterWarmup: [Int]
      /// The second of the soak the warm-up ended at (the first of ``residentAfterWarmup``).
      var warmSecond: Int

      /// Resident memory gained after the warm-up, KiB.
      var residentGrowth: Int { end.resident - warm.resident }
      /// Private memory gained after the warm-up, KiB.
      var privateGrowth: Int { end.privateMemory - warm.privateMemory }
      /// The largest rise of resident memory from one second to the next after the warm-up, KiB,
      /// and the second of the soak it ended at: one step of a frame's size is a buffer pool
      /// taking one more frame, a slope is a leak.
      var largestStep: (kib: Int, second: Int) {
        var largest = (kib: 0, second: warmSecond)
        for index in residentAfterWarmup.indices.dropFirst() {
          let step = residentAfterWarmup[index] - residentAfterWarmup[index - 1]
          if step > largest.kib { largest = (step, warmSecond + index) }
        }
        return largest
      }
    }

    /// The stream sent and received.
    var stream: BenchStream
    /// From the senders' start to the end.
    var seconds: Int
    /// From the senders' start to the reading growth is counted from.
    var warmup = 30
    /// Whether gst-launch's pair runs beside Revue's.
    var withGstLaunch = true

    /// The virtual camera of the stream's source: raw NV12 from the CSI module, as `send-*`.
    private var profile: String { stream.source == .mjpegCamera ? "usb-720p-webcam" : "csi-camera-module" }

    /// Runs both pairs for ``seconds`` and reads them every second; `progress` gets a line at
    /// the end of the warm-up and every minute.
    /// - Returns: each side's sender and receiver.
    /// - Throws: ``RevueError`` when a process fails or ends before the end.
    func run(progress: @Sendable (String) -> Void = { _ in }) async throws -> [Side: [Role: Readings]] {
      precondition(seconds > warmup, "the soak lasts longer than its warm-up")
      let (revuePort, gstPort) = (try PacketSink.freePort(), try PacketSink.freePort())
      // Every child has a deadline of its own too: the commands stop by themselves, and every
      // process still there 20 s after the end is stopped and then killed.
      let backstop = seconds + 20
      var children: [(Side, Role, ChildProcess)] = []
      func start(_ side: Side, _ role: Role, _ make: () throws -> ChildProcess) throws {
        children.append((side, role, try make()))
      }
      do {
        try start(.revue, .receiver) {
          try ChildProcess.revueCommand(
            ["receive", "--port", "\(revuePort)", "--codec", stream.codec.rawValue, "--duration", "\(backstop)"])
        }
        if withGstLaunch {
          try start(.gstLaunch, .receiver) {
            try ChildProcess.gstLaunch(
              stream.receive(port: gstPort, sink: "fakesink sync=false silent=false"), verbose: true, output: .collect)
          }
        }
        try await Task.sleep(for: .milliseconds(700))  // the same time for both to start listening
        try start(.revue, .sender) {
          try ChildProcess.revueCommand(
            [
              "stream", "--virtual-camera", profile, "--size", "\(stream.width)x\(stream.height)", "--fps", "30",
              "--codec", stream.codec.rawValue, "--bitrate", "\(stream.bitrate)", "--to", "127.0.0.1:\(revuePort)",
              "--duration", "\(backstop)",
            ])
        }
        if withGstLaunch {
          try start(.gstLaunch, .sender) {
            try ChildProcess.gstLaunch(
              "\(stream.source(frames: (backstop + 10) * 30)) ! \(stream.sendTail(port: gstPort))")
          }
        }
      } catch {
        for (_, _, child) in children { child.terminate() }
        for (_, _, child) in children { _ = await child.wait() }
        throw error
      }
      let ended = children.map { _, _, child in Task { await child.wait(stoppingAfter: Double(backstop)) } }
      var readings = [[ChildProcess.Reading]](repeating: [], count: children.count)
      var gone: (index: Int, second: Int)?
      let began = ContinuousClock.now
      sampling: for second in 1...seconds {
        try? await Task.sleep(until: began + .seconds(second), clock: .continuous)
        for (index, (_, _, child)) in children.enumerated() {
          guard let reading = child.reading else {
            gone = (index, second)
            break sampling
          }
          readings[index].append(reading)
        }
        if second == warmup || (second > warmup && second % 60 == 0) || second == seconds {
          progress(
            "  soak \(second) s: "
              + children.indices.map { index in
                let (side, role, _) = children[index]
                return "\(side.rawValue) \(role.rawValue) "
                  + String(format: "%.1f MiB", Double(readings[index].last!.resident) / 1024)
              }.joined(separator: ", "))
        }
      }
      for (_, _, child) in children { child.terminate() }
      var exits: [ChildProcess.Exit] = []
      for task in ended { exits.append(await task.value) }
      for (index, (side, role, _)) in children.enumerated() where !exits[index].succeeded || gone?.index == index {
        let how =
          gone.flatMap { $0.index == index ? "could not be read after \($0.second) s (ended?)" : nil } ?? "failed"
        throw RevueError(
          .gstreamer, "soak: the \(side.rawValue) \(role.rawValue) \(how): \(exits[index].error.suffix(600))")
      }
      var result: [Side: [Role: Readings]] = [:]
      for (index, (side, role, _)) in children.enumerated() {
        let series = readings[index]
        result[side, default: [:]][role] = Readings(
          start: series[0], warm: series[warmup - 1], end: series[seconds - 1],
          frames: Self.frames(side, role, exits[index]),
          residentAfterWarmup: series[(warmup - 1)...].map(\.resident), warmSecond: warmup)
      }
      return result
    }

    /// The frames a process reports: `revue: sent N frames`, `revue: received N frames`, or
    /// gst-launch's `fakesink` buffers.
    private static func frames(_ side: Side, _ role: Role, _ exit: ChildProcess.Exit) -> Int? {
      switch (side, role) {
      case (.gstLaunch, .receiver): return exit.output.components(separatedBy: "last-message = chain").count - 1
      case (.gstLaunch, .sender): return nil
      case (.revue, _):
        let prefix = role == .sender ? "revue: sent " : "revue: received "
        return exit.error.split(separator: "\n").last { $0.hasPrefix(prefix) }.flatMap {
          Int($0.dropFirst(prefix.count).prefix { $0.isNumber })
        }
      }
    }
  }

  /// The soak scenario: both pairs for ``minutes`` (10 by default), as the report's metrics.
  func soak(_ stream: BenchStream) async throws -> [Side: [Metric: Double]] {
    let seconds = (minutes ?? 10) * 60
    let soak = Soak(stream: stream, seconds: seconds)
    let result = try await soak.run { print($0) }
    return result.mapValues { processes in
      var metrics: [Metric: Double] = [:]
      for (role, process) in processes {
        let values: [SoakReading: Double] = [
          .residentStart: Double(process.start.resident) / 1024, .residentWarm: Double(process.warm.resident) / 1024,
          .residentEnd: Double(process.end.resident) / 1024, .residentGrowth: Double(process.residentGrowth),
          .residentGrowthPercent: Double(process.residentGrowth) * 100 / Double(process.warm.resident),
          .privateGrowth: Double(process.privateGrowth), .largestStep: Double(process.largestStep.kib),
          .threadsWarm: Double(process.warm.threads), .threadsAdded: Double(process.end.threads - process.warm.threads),
          .descriptorsWarm: Double(process.warm.descriptors),
          .descriptorsAdded: Double(process.end.descriptors - process.warm.descriptors),
        ]
        for (reading, value) in values { metrics[.soak(role, reading)] = value }
        if role == .receiver, let frames = process.frames { metrics[.frames] = Double(frames) }
      }
      return metrics
    }
  }

  /// What the soak reports of each process.
  enum SoakReading: Sendable, Hashable {
    /// Resident memory at the start, after the warm-up and at the end, MiB.
    case residentStart, residentWarm, residentEnd
    /// Resident memory gained after the warm-up, KiB and % of the memory after the warm-up.
    case residentGrowth, residentGrowthPercent
    /// Private memory (`RssAnon`) gained after the warm-up, KiB.
    case privateGrowth
    /// The largest rise of resident memory in one second after the warm-up, KiB.
    case largestStep
    /// Threads after the warm-up, and added since.
    case threadsWarm, threadsAdded
    /// Open file descriptors after the warm-up, and added since.
    case descriptorsWarm, descriptorsAdded
  }
}

import Foundation
import Glibc
import RevueSDK
import Synchronization

/// Now on the monotonic clock (`CLOCK_MONOTONIC`, shared by every process of the machine), in
/// nanoseconds: the bench stamps events in its children and in itself with it.
func monotonicNanoseconds() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Milliseconds between two monotonic stamps.
func milliseconds(from start: UInt64, to end: UInt64) -> Double { (Double(end) - Double(start)) / 1e6 }

/// A child process the bench starts and reaps itself (`posix_spawn`, `wait4`), so that its CPU
/// time and peak resident memory are its own and never mixed with another child's.
final class ChildProcess: Sendable {
  /// How a child ended and what it used.
  struct Exit: Sendable {
    /// Whether it exited with 0, or ended on the signal the bench sent it.
    var succeeded: Bool
    /// User plus system CPU seconds of the whole process (all threads), from `wait4`.
    var cpuSeconds: Double
    /// Peak resident memory, in MiB: the largest `VmHWM` of `/proc/PID/status` read every 20 ms
    /// while it ran. Not `ru_maxrss`: `posix_spawn` runs the child in the bench's memory until its
    /// exec, and Linux carries that high-water mark into the child's `ru_maxrss`.
    var maxResidentMiB: Double
    /// Peak private memory, in MiB: the largest `RssAnon` of `/proc/PID/status` read every 20 ms
    /// while it ran: heap, stacks and buffers, without the shared libraries' pages that
    /// ``maxResidentMiB`` counts too (mapped from files, shared with every process that loads them).
    var maxPrivateMiB: Double
    /// When it was reaped, on the monotonic clock.
    var ended: UInt64
    /// Its standard error, for messages.
    var errors: String
  }

  /// What becomes of the child's standard output.
  enum Output {
    /// Thrown away.
    case discard
    /// Collected; read it with ``output`` after ``wait()``.
    case collect
    /// Left to the caller: read ``outputDescriptor``.
    case pipe
  }

  let pid: pid_t
  /// When it was spawned, on the monotonic clock.
  let started: UInt64
  /// The write end of the child's standard input (the bench closes it to ask a child to stop).
  let inputDescriptor: Int32
  /// The read end of the child's standard output, with ``Output/pipe``.
  let outputDescriptor: Int32
  private let errorPath: String
  private let collected = Collected()
  private let collectorDone = DispatchSemaphore(value: 0)
  private let collects: Bool
  private let interrupted = Atomic<Bool>(false)
  private let inputClosed = Atomic<Bool>(false)
  private let reaped = Reaped()
  private let peakKiB = PeakMemory()
  private let peakPrivateKiB = PeakMemory()

  /// Starts `arguments[0]` (a path) with the rest as its arguments.
  /// - Parameter environment: the child's environment as `KEY=VALUE` strings; nil for the bench's own.
  /// - Throws: ``RevueError`` when the process cannot start.
  init(_ arguments: [String], output: Output = .discard, environment: [String]? = nil) throws {
    var input: [Int32] = [0, 0]
    var outputPipe: [Int32] = [-1, -1]
    guard Self.pipe(&input), output == .discard || Self.pipe(&outputPipe) else {
      throw RevueError(.invalidState, "cannot make a pipe: \(String(cString: strerror(errno)))")
    }
    // A big pipe: raw frames go through it in one write.
    _ = fcntl(input[1], Self.setPipeSize, 1 << 20)
    if outputPipe[0] >= 0 { _ = fcntl(outputPipe[0], Self.setPipeSize, 1 << 20) }
    errorPath = NSTemporaryDirectory() + "revue-bench-\(UInt32.random(in: 0..<UInt32.max)).err"
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, input[0], 0)
    if output == .discard {
      posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    } else {
      posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
    }
    posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let envp = environment.map { $0.map { strdup($0) } + [nil] }
    defer { for pointer in envp ?? [] { free(pointer) } }
    var pid: pid_t = 0
    started = monotonicNanoseconds()
    // The calling thread may block signals (Dispatch's threads do), and a child inherits that mask:
    // give it none blocked and the default actions, so that SIGINT stops gst-launch.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var signals = sigset_t()
    sigemptyset(&signals)
    posix_spawnattr_setsigmask(&attributes, &signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGPIPE)
    posix_spawnattr_setsigdefault(&attributes, &signals)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let result =
      if let envp {
        posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
      } else {
        posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
      }
    close(input[0])
    if outputPipe[1] >= 0 { close(outputPipe[1]) }
    guard result == 0 else {
      close(input[1])
      if outputPipe[0] >= 0 { close(outputPipe[0]) }
      throw RevueError(.invalidState, "cannot start \(arguments[0]): \(String(cString: strerror(result)))")
    }
    self.pid = pid
    inputDescriptor = input[1]
    outputDescriptor = outputPipe[0]
    collects = output == .collect
    let (peakKiB, peakPrivateKiB, reaped, path) = (
      self.peakKiB, self.peakPrivateKiB, self.reaped, "/proc/\(pid)/status"
    )
    Thread {
      while !reaped.isMarked {
        if let status = try? String(contentsOfFile: path, encoding: .utf8) {
          for line in status.split(separator: "\n") {
            let peak = line.hasPrefix("VmHWM:") ? peakKiB : line.hasPrefix("RssAnon:") ? peakPrivateKiB : nil
            if let peak, let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) {
              peak.raise(to: kib)
            }
          }
        }
        usleep(20_000)
      }
    }.start()
    if collects {
      let descriptor = outputPipe[0]
      Thread { [collected, collectorDone] in
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
          let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
          if count > 0 {
            collected.data.withLock { $0.append(contentsOf: chunk[..<count]) }
          } else if count == 0 || errno != EINTR {
            break
          }
        }
        collectorDone.signal()
      }.start()
    }
  }

  /// `F_SETPIPE_SZ` (Linux; not exported by Glibc's module).
  private static let setPipeSize: Int32 = 1031

  /// Makes a pipe whose two ends close on exec (the child gets only what it is given).
  private static func pipe(_ ends: inout [Int32]) -> Bool {
    guard Glibc.pipe(&ends) == 0 else { return false }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    return true
  }

  /// The CPU seconds the child's threads have run so far, to the nanosecond: the sum of
  /// `/proc/PID/task/*/schedstat` (`/proc/PID/stat` counts in 10 ms ticks, too coarse for a
  /// window of a few seconds); nil once it is gone. Threads that have ended are not counted:
  /// take both ends of a window from here.
  var cpuSecondsNow: Double? {
    let tasks = "/proc/\(pid)/task"
    guard let threads = try? FileManager.default.contentsOfDirectory(atPath: tasks) else { return nil }
    let nanoseconds = threads.reduce(0) { total, thread in
      let text = try? String(contentsOfFile: "\(tasks)/\(thread)/schedstat", encoding: .utf8)
      return total + (text?.split(separator: " ").first.flatMap { Int($0) } ?? 0)
    }
    return Double(nanoseconds) / 1e9
  }

  /// What `/proc/PID` says of the child now: resident and private memory, threads, open file
  /// descriptors; nil once it is gone.
  var reading: Reading? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
      let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
    else { return nil }
    var fields: [Substring: Int] = [:]
    for line in status.split(separator: "\n") {
      let parts = line.split(separator: ":", maxSplits: 1)
      guard parts.count == 2, ["VmRSS", "RssAnon", "Threads"].contains(parts[0]) else { continue }
      fields[parts[0]] = parts[1].split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) }
    }
    guard let resident = fields["VmRSS"], let anonymous = fields["RssAnon"], let threads = fields["Threads"] else {
      return nil
    }
    return Reading(resident: resident, privateMemory: anonymous, threads: threads, descriptors: descriptors.count)
  }

  /// One reading of a child's `/proc/PID/status` and `/proc/PID/fd`.
  struct Reading: Sendable, Hashable {
    /// Resident memory (`VmRSS`), KiB.
    var resident: Int
    /// Private memory (`RssAnon`: heap, stacks, buffers), KiB.
    var privateMemory: Int
    var threads: Int
    /// Open file descriptors (sockets, pipes, files).
    var descriptors: Int
  }

  /// Asks the child to stop (again and again is harmless): closes its standard input (a Revue
  /// child stops then) and sends it SIGINT (gst-launch stops then).
  /// A child still there 5 s later is killed.
  func stop() {
    interrupted.store(true, ordering: .relaxed)
    closeInput()
    if !reaped.isMarked { kill(pid, SIGINT) }
    let (pid, reaped) = (self.pid, self.reaped)
    Thread {
      Thread.sleep(forTimeInterval: 5)
      if !reaped.isMarked { kill(pid, SIGKILL) }
    }.start()
  }

  /// Closes the child's standard input (end of the raw frames, or the signal to stop).
  func closeInput() {
    if !inputClosed.exchange(true, ordering: .relaxed) { close(inputDescriptor) }
  }

  /// Waits for the child to end and reaps it.
  func wait() async -> Exit {
    let (pid, collects, collectorDone, reaped) = (self.pid, self.collects, self.collectorDone, self.reaped)
    let (status, usage, ended) = await withCheckedContinuation { continuation in
      Thread {
        var status: Int32 = 0
        var usage = rusage()
        // Marked reaped while still a zombie (WNOWAIT), so the watchdog of stop() never kills a reused pid.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        reaped.mark()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let ended = monotonicNanoseconds()
        if collects { collectorDone.wait() }
        continuation.resume(returning: (status, usage, ended))
      }.start()
    }
    if outputDescriptor >= 0 && !collects { close(outputDescriptor) }
    closeInput()
    let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    try? FileManager.default.removeItem(atPath: errorPath)
    let exitedCleanly = status & 0x7f == 0 && (status >> 8) & 0xff == 0
    return Exit(
      succeeded: exitedCleanly || interrupted.load(ordering: .relaxed),
      cpuSeconds: Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6,
      maxResidentMiB: Double(peakKiB.value) / 1024, maxPrivateMiB: Double(peakPrivateKiB.value) / 1024,
      ended: ended, errors: errors)
  }

  /// Waits for the child to end, stopping it (``stop()``) if it is still there after `seconds`:
  /// a gst-launch whose RTCP branch holds back its end of stream is not waited for forever.
  func wait(stoppingAfter seconds: Double) async -> Exit {
    let watchdog = Task { [self] in
      try await Task.sleep(for: .seconds(seconds))
      stop()
    }
    defer { watchdog.cancel() }
    return await wait()
  }

  /// The standard output collected (with ``Output/collect``), after ``wait()``.
  var output: String { String(decoding: outputData, as: UTF8.self) }

  /// The standard output collected, as bytes.
  var outputData: Data { collected.data.withLock { $0 } }

  /// The `KEY=VALUE` lines of the standard output collected (a bench child's results), in order.
  var results: [(key: String, value: String)] {
    output.split(separator: "\n").compactMap { line in
      let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
      return parts.count == 2 ? (parts[0], parts[1]) : nil
    }
  }

  /// Starts `gst-launch-1.0` with a pipeline description (split at spaces).
  static func gstLaunch(_ description: String, verbose: Bool = false, output: Output = .discard) throws
    -> ChildProcess
  {
    try ChildProcess(
      ["/usr/bin/gst-launch-1.0", verbose ? "-v" : "-q"] + description.split(separator: " ").map(String.init),
      output: output)
  }

  /// Starts a `revue` command (`stream …`, `receive …`) of `executable`, this executable by
  /// default, in the bench's environment without `GST_TRACERS` (a leaks tracer set for the tests
  /// would count every object of the child, and be measured with it).
  static func revueCommand(_ arguments: [String], executable: String? = nil) throws -> ChildProcess {
    let path = executable ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    let environment = ProcessInfo.processInfo.environment.filter { $0.key != "GST_TRACERS" }.map {
      "\($0.key)=\($0.value)"
    }
    return try ChildProcess([path] + arguments, environment: environment)
  }

  /// Starts this executable as a bench child: `revue bench --child KIND KEY=VALUE …`.
  static func revue(_ kind: String, _ parameters: [String: String], output: Output = .collect) throws -> ChildProcess {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    return try ChildProcess(
      [executable, "bench", "--child", kind] + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" },
      output: output)
  }
}

/// The bytes a child wrote, shared with the thread that reads them.
private final class Collected: Sendable {
  let data = Mutex(Data())
}

/// Whether a child has ended, shared with the watchdog that would kill it.
private final class Reaped: Sendable {
  private let ended = Atomic<Bool>(false)
  /// Marks the child ended.
  func mark() { ended.store(true, ordering: .releasing) }
  /// Whether the child has ended.
  var isMarked: Bool { ended.load(ordering: .acquiring) }
}

/// The highest memory reading of a child, shared with the thread that reads it.
private final class PeakMemory: Sendable {
  private let peak = Atomic<Int>(0)
  /// Keeps `kib` if it is higher than what was kept.
  func raise(to kib: Int) { peak.max(kib, ordering: .relaxed) }
  /// The highest reading, in KiB.
  var value: Int { peak.load(ordering: .relaxed) }
}

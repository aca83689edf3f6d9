import Foundation
import Glibc
import Synchronization

/// A program started as a child of this process: its standard output and error read as they
/// come, it reaped and measured by threads of its own.
///
/// No child outlives its owner: one still running when its owner lets go of it is killed
/// (SIGKILL), and a wait that passes its deadline, or whose task is cancelled, stops it
/// (``Stopping``). Nothing here blocks a thread of Swift's concurrency pool. The child runs in
/// this process's group (Ctrl-C in a terminal reaches it too), with no signal blocked and the
/// default action for SIGINT, SIGTERM, SIGPIPE and SIGCHLD, whatever the spawning thread blocks
/// or ignores: Dispatch's threads block signals, and a child would inherit that.
public final class ChildProcess: Sendable {
  /// What the child's standard input is.
  public enum Input: Sendable {
    /// `/dev/null`: it reads nothing.
    case empty
    /// A pipe whose write end is ``ChildProcess/inputDescriptor``: write to it (a 1 MiB pipe:
    /// a raw frame goes in one write), and close it (``ChildProcess/closeInput()``) to end it.
    case pipe
  }

  /// What becomes of the child's standard output. Its standard error is always collected.
  public enum Output: Sendable {
    /// Thrown away.
    case discard
    /// Collected as it comes (``ChildProcess/written``, ``Exit/output``).
    case collect
    /// Left to the caller, who reads ``ChildProcess/outputDescriptor`` (a 1 MiB pipe, for raw
    /// frames).
    case pipe
  }

  /// How a child is asked to stop: a signal (and its standard input closed, when it is a
  /// pipe), then SIGKILL when it has not exited `grace` seconds later.
  public struct Stopping: Sendable {
    /// The signal that asks it to stop.
    public var signal: Int32
    /// Seconds it has to exit before it is killed.
    public var grace: Double

    /// A way to stop a child.
    public init(signal: Int32, grace: Double) {
      (self.signal, self.grace) = (signal, grace)
    }

    /// SIGTERM, then SIGKILL 2 s later.
    public static let terminate = Stopping(signal: SIGTERM, grace: 2)
  }

  /// What the child has written so far.
  public struct Written: Sendable {
    /// Its standard output (collected with ``Output/collect``; empty otherwise).
    public var output: String
    /// Its standard error.
    public var error: String
  }

  /// What a wait for something the child writes came to (``wait(within:until:)``).
  public enum Awaited: Sendable {
    /// The condition held.
    case satisfied
    /// The child ended (exited, its pipes closed) without it.
    case ended
    /// The deadline came, or the waiting task was cancelled, first; the child still runs.
    case timedOut
  }

  /// How a child ended, what it wrote and what it used.
  public struct Exit: Sendable {
    /// Its exit status, or 128 + the signal that ended it (as a shell says); -1 when it was not
    /// reaped (a wait that gave up on it).
    public var status: Int32
    /// Whether it was asked to stop (``terminate()``, ``stop()``, a deadline, a cancelled wait)
    /// while it ran: how it ended is then no failure of its own.
    public var wasStopped: Bool
    /// Whether the deadline of ``wait(stoppingAfter:)`` stopped it.
    public var timedOut: Bool
    /// What it wrote to standard output (with ``Output/collect``).
    public var output: String
    /// What it wrote to standard error.
    public var error: String
    /// User plus system CPU seconds of the whole process (all its threads), from `wait4`; 0
    /// when it was not reaped.
    public var cpuSeconds: Double
    /// Its peak resident memory, KiB: the largest `VmHWM` of `/proc/PID/status` read every 20 ms
    /// while it ran (started with `tracksPeakMemory`; nil without). Not `ru_maxrss`: `posix_spawn` runs the child in this
    /// process's memory until its exec, and Linux carries that high-water mark into the child's.
    public var peakResidentKiB: Int?
    /// Its peak private memory, KiB: the largest `RssAnon` read likewise (heap, stacks and
    /// buffers, without the shared libraries' pages that ``peakResidentKiB`` counts).
    public var peakPrivateKiB: Int?
    /// When it was reaped, on `CLOCK_MONOTONIC` (as ``ChildProcess/started``); nil when it was not.
    public var ended: UInt64?

    /// Whether it exited with 0, or ended after it was asked to stop (however the signal ended it).
    public var succeeded: Bool { status == 0 || wasStopped }
  }

  /// One reading of what a running child holds (`/proc/PID/status`, `/proc/PID/fd`).
  public struct Reading: Sendable, Hashable {
    /// Resident memory (`VmRSS`), KiB.
    public var resident: Int
    /// Private memory (`RssAnon`: heap, stacks, buffers), KiB.
    public var privateMemory: Int
    /// Threads.
    public var threads: Int
    /// Open file descriptors (sockets, pipes, files).
    public var descriptors: Int
  }

  /// A program that could not start.
  public struct StartError: Error, CustomStringConvertible {
    /// Which program, and why.
    public var description: String
  }

  /// The command line, for messages.
  public let command: String
  /// The child's process id.
  public let pid: Int32
  /// When it was spawned, on `CLOCK_MONOTONIC` in nanoseconds: the clock every process of the
  /// machine reads alike, so that it compares with stamps the child makes.
  public let started: UInt64
  /// The write end of the child's standard input with ``Input/pipe``; -1 otherwise.
  public let inputDescriptor: Int32
  /// The read end of the child's standard output with ``Output/pipe`` (closed when this is let
  /// go of); -1 otherwise.
  public let outputDescriptor: Int32
  private let stopping: Stopping
  private let shared: Shared

  /// Starts `executable` with `arguments`.
  /// - Parameters:
  ///   - environment: laid over this process's environment; a nil value removes the variable.
  ///   - input: its standard input: empty, or a pipe of the caller's.
  ///   - output: what becomes of its standard output.
  ///   - stopping: how it is asked to stop at a deadline, on ``terminate()`` and ``stop()``.
  ///   - tracksPeakMemory: whether a thread reads its memory every 20 ms while it runs, for
  ///     ``Exit/peakResidentKiB`` and ``Exit/peakPrivateKiB``.
  /// - Throws: ``StartError`` when it cannot start.
  public init(
    _ executable: URL, _ arguments: [String] = [], environment: [String: String?] = [:], input: Input = .empty,
    output: Output = .collect, stopping: Stopping = .terminate, tracksPeakMemory: Bool = false
  ) throws(StartError) {
    command = ([executable.lastPathComponent] + arguments).joined(separator: " ")
    self.stopping = stopping
    var (inputPipe, outputPipe, errorPipe): ([Int32], [Int32], [Int32]) = ([-1, -1], [-1, -1], [-1, -1])
    var pid: pid_t = 0
    var started: UInt64 = 0
    // The pipes' ends close on exec, so that programs started meanwhile do not hold them open;
    // made and spawned under one lock, so that no other spawn of this process sees them before
    // they are marked.
    let result = Self.spawning.withLock { _ -> Int32 in
      guard input == .empty || Self.pipe(&inputPipe), output == .discard || Self.pipe(&outputPipe),
        Self.pipe(&errorPipe)
      else { return errno }
      var actions = posix_spawn_file_actions_t()
      posix_spawn_file_actions_init(&actions)
      defer { posix_spawn_file_actions_destroy(&actions) }
      if input == .pipe {
        posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
      } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
      }
      if output == .discard {
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
      } else {
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
      }
      posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
      var attributes = posix_spawnattr_t()
      posix_spawnattr_init(&attributes)
      defer { posix_spawnattr_destroy(&attributes) }
      var signals = sigset_t()
      sigemptyset(&signals)
      posix_spawnattr_setsigmask(&attributes, &signals)
      for signal in [SIGINT, SIGTERM, SIGPIPE, SIGCHLD] { sigaddset(&signals, signal) }
      posix_spawnattr_setsigdefault(&attributes, &signals)
      posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
      let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
      defer { argv.forEach { free($0) } }
      let envp = Self.environment(changedBy: environment).map { strdup($0) } + [nil]
      defer { envp.forEach { free($0) } }
      started = monotonicNanoseconds()
      return posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
    }
    for end in [inputPipe[0], outputPipe[1], errorPipe[1]] where end >= 0 { close(end) }
    guard result == 0 else {
      for end in [inputPipe[1], outputPipe[0], errorPipe[0]] where end >= 0 { close(end) }
      throw StartError(description: "cannot start \(executable.path): \(String(cString: strerror(result)))")
    }
    (self.pid, self.started) = (pid, started)
    (inputDescriptor, outputDescriptor) = (inputPipe[1], output == .pipe ? outputPipe[0] : -1)
    // A big pipe where the caller moves raw frames itself.
    for end in [inputDescriptor, outputDescriptor] where end >= 0 { _ = fcntl(end, Self.setPipeSize, 1 << 20) }
    let collected = [(errorPipe[0], false)] + (output == .collect ? [(outputPipe[0], true)] : [])
    let shared = Shared(openPipes: collected.count, inputOpen: input == .pipe)
    self.shared = shared
    for (descriptor, isOutput) in collected {
      Thread.detachNewThread { shared.collect(descriptor, isOutput: isOutput) }
    }
    Thread.detachNewThread { [pid] in shared.reap(pid) }
    if tracksPeakMemory {
      Thread.detachNewThread { [pid] in shared.trackPeakMemory(of: pid) }
    }
  }

  /// The executable `name` in this program's folder, where `swift build` puts every executable
  /// of the package and the test binary: `revue` beside `revue-bench`, or beside the tests.
  public static func executable(named name: String) -> URL {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
      .appendingPathComponent(name)
  }

  /// A child still running when its owner lets go of it is killed.
  deinit {
    shared.send(SIGKILL, to: pid)
    closeInput()
    if outputDescriptor >= 0 { close(outputDescriptor) }
  }

  /// Held while pipes are made and a child spawned.
  private static let spawning = Mutex(())

  /// `F_SETPIPE_SZ` (Linux; not exported by Glibc's module).
  private static let setPipeSize: Int32 = 1031

  /// Makes a pipe whose two ends close on exec.
  private static func pipe(_ ends: inout [Int32]) -> Bool {
    guard Glibc.pipe(&ends) == 0 else { return false }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    return true
  }

  /// This process's environment (`environ`, as `setenv` left it) with `changes` laid over it,
  /// as `KEY=VALUE` strings. A copy, never `environ` itself: a `setenv` on another thread may
  /// move that array while `posix_spawn` reads it.
  private static func environment(changedBy changes: [String: String?]) -> [String] {
    var variables: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
      let text = String(cString: pointer)
      if let equals = text.firstIndex(of: "=") {
        variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
      }
      entry += 1
    }
    for (key, value) in changes { variables[key] = value }
    return variables.map { "\($0.key)=\($0.value)" }
  }

  // MARK: - Waiting

  /// Waits until the child has ended: exited, and its collected output and error closed. A
  /// waiting task that is cancelled stops it (``stop()``) and returns what it has.
  public func wait() async -> Exit {
    guard await shared.until({ $0.hasEnded }) else { return await stop() }
    return shared.exit
  }

  /// Waits until the child has ended; one still running after `seconds` (or when the waiting
  /// task is cancelled) is stopped (``stop()``), and then ``Exit/timedOut`` says so.
  public func wait(stoppingAfter seconds: Double) async -> Exit {
    guard await !shared.until({ $0.hasEnded }, within: seconds) else { return shared.exit }
    if !Task.isCancelled { shared.update { if !$0.hasEnded { $0.timedOut = true } } }
    return await stop()
  }

  /// Waits until `condition` holds of what the child has written so far, it ends, or
  /// `seconds` pass (the child is left running then).
  public func wait(within seconds: Double, until condition: @escaping @Sendable (Written) -> Bool) async -> Awaited {
    let holds = { @Sendable (state: State) in condition(state.written) }
    _ = await shared.until({ holds($0) || $0.hasEnded }, within: seconds)
    return shared.state.withLock { holds($0) ? .satisfied : $0.hasEnded ? .ended : .timedOut }
  }

  /// What the child has written so far.
  public var written: Written { shared.state.withLock { $0.written } }

  // MARK: - Stopping

  /// Asks the child to stop and returns at once (again and again is harmless): closes its
  /// standard input if it is a pipe, sends it ``Stopping/signal``, and kills it if it has not
  /// exited ``Stopping/grace`` seconds later (this object lives until then).
  public func terminate() {
    shared.update { if !$0.exited { $0.wasStopped = true } }
    closeInput()
    shared.send(stopping.signal, to: pid)
    Task { [self] in
      if await !shared.until({ $0.exited }, within: stopping.grace) { shared.send(SIGKILL, to: pid) }
    }
  }

  /// Stops the child (``terminate()``) and waits until it has ended, or, should a child of its
  /// own hold its pipes, 10 s after it was killed. Returns how it ended.
  @discardableResult public func stop() async -> Exit {
    terminate()
    _ = await shared.until({ $0.hasEnded }, within: stopping.grace + 10)
    return shared.exit
  }

  /// Closes the child's standard input (with ``Input/pipe``): the end of what it is given, or
  /// the sign to stop.
  public func closeInput() {
    if shared.closeInput() { close(inputDescriptor) }
  }

  // MARK: - Measuring

  /// The CPU seconds the child has used so far, user and system, all its threads, those that
  /// have ended included, to the nanosecond (its process CPU clock, `clock_getcpuclockid`;
  /// `/proc/PID/stat` counts 10 ms ticks, too coarse for a window of a few seconds); nil once it
  /// has exited.
  public var cpuSeconds: Double? {
    shared.ifRunning { () -> Double? in
      var clock = clockid_t()
      var time = timespec()
      guard clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &time) == 0 else { return nil }
      return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    } ?? nil
  }

  /// What the child holds now: memory, threads, file descriptors; nil once it has exited.
  public var reading: Reading? {
    shared.ifRunning { () -> Reading? in
      guard let fields = Self.status(of: pid, ["VmRSS", "RssAnon", "Threads"]),
        let resident = fields["VmRSS"], let privateMemory = fields["RssAnon"], let threads = fields["Threads"],
        let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
      else { return nil }
      return Reading(resident: resident, privateMemory: privateMemory, threads: threads, descriptors: descriptors.count)
    } ?? nil
  }

  /// The numbers of the fields `names` of `/proc/PID/status` (`VmRSS:   1234 kB`); nil when it
  /// cannot be read.
  fileprivate static func status(of pid: Int32, _ names: Set<Substring>) -> [Substring: Int]? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    var fields: [Substring: Int] = [:]
    for line in status.split(separator: "\n") {
      let parts = line.split(separator: ":", maxSplits: 1)
      guard parts.count == 2, names.contains(parts[0]) else { continue }
      fields[parts[0]] = parts[1].split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) }
    }
    return fields
  }
}

/// Now on `CLOCK_MONOTONIC`, in nanoseconds.
private func monotonicNanoseconds() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// A child's state as its threads see it.
private struct State: Sendable {
  var output = Data()
  var error = Data()
  /// Collected pipes not yet at their end.
  var openPipes: Int
  var inputOpen: Bool
  /// Set once the child has exited, while it is still a zombie: no signal goes to its pid
  /// (which another process may take once it is reaped), and `/proc` is not read, after that.
  var exited = false
  var status: Int32?
  var cpuSeconds = 0.0
  var ended: UInt64?
  var peakResident: Int?
  var peakPrivate: Int?
  var wasStopped = false
  var timedOut = false
  var waiters: [Int: Waiter] = [:]
  /// Waiters whose deadline came (or whose task was cancelled) before they were added.
  var expired: Set<Int> = []
  var nextWaiter = 0

  /// Exited, and its collected pipes at their end.
  var hasEnded: Bool { status != nil && openPipes == 0 }

  var written: ChildProcess.Written {
    ChildProcess.Written(output: String(decoding: output, as: UTF8.self), error: String(decoding: error, as: UTF8.self))
  }

  var exit: ChildProcess.Exit {
    ChildProcess.Exit(
      status: status ?? -1, wasStopped: wasStopped, timedOut: timedOut, output: String(decoding: output, as: UTF8.self),
      error: String(decoding: error, as: UTF8.self), cpuSeconds: cpuSeconds, peakResidentKiB: peakResident,
      peakPrivateKiB: peakPrivate, ended: ended)
  }
}

/// A wait for a condition of the state.
private struct Waiter: Sendable {
  var condition: @Sendable (State) -> Bool
  var continuation: CheckedContinuation<Bool, Never>
}

/// The state, shared by the object and the threads that read the pipes and reap the child
/// (which hold this, not the object, so that the object can go while the child runs).
private final class Shared: Sendable {
  let state: Mutex<State>

  init(openPipes: Int, inputOpen: Bool) { state = Mutex(State(openPipes: openPipes, inputOpen: inputOpen)) }

  var exit: ChildProcess.Exit { state.withLock { $0.exit } }

  /// Changes the state, then wakes the waiters whose condition now holds.
  func update(_ change: (inout State) -> Void) {
    let ready = state.withLock { state in
      change(&state)
      let ready = state.waiters.filter { $0.value.condition(state) }
      for id in ready.keys { state.waiters[id] = nil }
      return ready.values.map(\.continuation)
    }
    for continuation in ready { continuation.resume(returning: true) }
  }

  /// Sends `signal` to the child unless it has exited.
  func send(_ signal: Int32, to pid: Int32) {
    state.withLock { if !$0.exited { kill(pid, signal) } }
  }

  /// `body`'s result while the child has not exited (under the lock, so that its pid is its own);
  /// nil after.
  func ifRunning<T: Sendable>(_ body: () -> T) -> T? {
    state.withLock { $0.exited ? nil : body() }
  }

  /// Marks the input closed; true the first time.
  func closeInput() -> Bool {
    state.withLock { state in
      defer { state.inputOpen = false }
      return state.inputOpen
    }
  }

  /// Returns true once `condition` holds; false when `seconds` pass first, or the task is
  /// cancelled.
  func until(_ condition: @escaping @Sendable (State) -> Bool, within seconds: Double? = nil) async -> Bool {
    let id = state.withLock { state in
      defer { state.nextWaiter += 1 }
      return state.nextWaiter
    }
    let timer = seconds.map { seconds in
      Task {
        guard (try? await Task.sleep(for: .seconds(seconds))) != nil else { return }  // waits-on-purpose: deadline
        self.expire(id)
      }
    }
    defer {
      timer?.cancel()
      _ = state.withLock { $0.expired.remove(id) }
    }
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state -> Bool? in
          if condition(state) { return true }
          if state.expired.contains(id) || Task.isCancelled { return false }
          state.waiters[id] = Waiter(condition: condition, continuation: continuation)
          return nil
        }
        if let ready { continuation.resume(returning: ready) }
      }
    } onCancel: {
      expire(id)
    }
  }

  /// Ends waiter `id` with false, or marks it so if it is not waiting yet.
  private func expire(_ id: Int) {
    let waiter = state.withLock { state in
      guard let waiter = state.waiters.removeValue(forKey: id) else {
        state.expired.insert(id)
        return Waiter?.none
      }
      return waiter
    }
    waiter?.continuation.resume(returning: false)
  }

  /// Reads a collected pipe to its end, then closes it.
  func collect(_ descriptor: Int32, isOutput: Bool) {
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      update { state in
        if isOutput {
          state.output.append(contentsOf: chunk[..<count])
        } else {
          state.error.append(contentsOf: chunk[..<count])
        }
      }
    }
    close(descriptor)
    update { $0.openPipes -= 1 }
  }

  /// Waits for the child to exit, then reaps it (`wait4`: its status and CPU time).
  func reap(_ pid: Int32) {
    // Marked as exited while still a zombie (WNOWAIT), so that no signal is sent once the pid
    // could belong to another process.
    var info = siginfo_t()
    while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
    update { $0.exited = true }
    var status: Int32 = 0
    var usage = rusage()
    var reaped = wait4(pid, &status, 0, &usage)
    while reaped < 0 && errno == EINTR { reaped = wait4(pid, &status, 0, &usage) }
    let ended = monotonicNanoseconds()
    // WIFSIGNALED, WTERMSIG and WEXITSTATUS are macros Swift does not import.
    let signal = status & 0x7f
    update { state in
      state.status = reaped < 0 ? -1 : signal != 0 ? 128 + signal : (status >> 8) & 0xff
      state.cpuSeconds =
        Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
      state.ended = ended
    }
  }

  /// Reads the child's `VmHWM` and `RssAnon` every 20 ms until it exits, keeping the highest.
  func trackPeakMemory(of pid: Int32) {
    while true {
      let running = state.withLock { state in
        guard !state.exited else { return false }
        if let fields = ChildProcess.status(of: pid, ["VmHWM", "RssAnon"]) {
          if let kib = fields["VmHWM"] { state.peakResident = max(state.peakResident ?? 0, kib) }
          if let kib = fields["RssAnon"] { state.peakPrivate = max(state.peakPrivate ?? 0, kib) }
        }
        return true
      }
      guard running else { return }
      usleep(20_000)
    }
  }
}

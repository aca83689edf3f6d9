import Foundation
import Synchronization
import Testing

/// A program a test runs, its standard output and error collected as they come.
///
/// Every wait on it has a deadline; at a deadline the program is ended (SIGTERM, then SIGKILL)
/// and the failure quotes the end of what it wrote to standard error. Nothing here blocks a
/// thread of Swift's concurrency pool: the pipes are read, and the program reaped, on threads of
/// their own.
public final class Subprocess: Sendable {
  /// How a program ended and what it wrote.
  public struct Exit: Sendable {
    /// Its exit status, or 128 + the signal that ended it (as a shell says); -1 when unknown.
    public var status: Int32
    /// What it wrote to standard output.
    public var output: String
    /// What it wrote to standard error.
    public var error: String
  }

  /// A program that could not start.
  public struct SubprocessError: Error, CustomStringConvertible {
    /// Which program, and why.
    public var description: String
  }

  /// The command line, for messages.
  public let command: String
  private let pid: Int32
  private let shared: Shared

  /// The state, shared with the threads that read the pipes and reap the program.
  private final class Shared: Sendable {
    let state = Mutex(State())

    /// Changes the state, then wakes the waiters whose condition now holds.
    func update(_ change: (inout State) -> Void) {
      let ready = state.withLock { state in
        change(&state)
        let ready = state.waiters.filter { $0.value.condition(state) }
        for id in ready.keys { state.waiters[id] = nil }
        return ready.values.map(\.continuation)
      }
      for continuation in ready { continuation.resume() }
    }
  }

  private struct State {
    var output = Data()
    var error = Data()
    var openPipes = 2
    var exited = false
    var status: Int32?
    var waiters: [Int: (condition: @Sendable (State) -> Bool, continuation: CheckedContinuation<Void, Never>)] = [:]
    var nextWaiter = 0

    var hasEnded: Bool { status != nil && openPipes == 0 }
    var exit: Exit {
      Exit(
        status: status ?? -1, output: String(decoding: output, as: UTF8.self),
        error: String(decoding: error, as: UTF8.self))
    }
  }

  /// Starts `executable` with `arguments`, its environment this process's with `environment`
  /// laid over it, standard input empty, no signal blocked and every signal's default action.
  public init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws {
    command = ([executable.lastPathComponent] + arguments).joined(separator: " ")
    // posix_spawn rather than Foundation's Process: a child of a Dispatch thread inherits its
    // blocked signals (SIGTERM among them). The pipes' ends close on exec, so that programs other
    // tests start meanwhile do not hold them open; made and spawned under one lock, so that no
    // other spawn of these tests sees them before they are marked.
    var output: [Int32] = [-1, -1]
    var error: [Int32] = [-1, -1]
    var pid: pid_t = 0
    let result = Self.spawning.withLock { _ in
      guard Self.pipe(&output), Self.pipe(&error) else { return errno }
      var actions = posix_spawn_file_actions_t()
      posix_spawn_file_actions_init(&actions)
      defer { posix_spawn_file_actions_destroy(&actions) }
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
      posix_spawn_file_actions_adddup2(&actions, output[1], 1)
      posix_spawn_file_actions_adddup2(&actions, error[1], 2)
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
      let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
      let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
      defer { envp.forEach { free($0) } }
      return posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
    }
    for end in [output[1], error[1]] where end >= 0 { close(end) }
    guard result == 0 else {
      for end in [output[0], error[0]] where end >= 0 { close(end) }
      throw SubprocessError(description: "cannot start \(executable.path): \(String(cString: strerror(result)))")
    }
    self.pid = pid
    let shared = Shared()
    self.shared = shared
    for (descriptor, isOutput) in [(output[0], true), (error[0], false)] {
      Thread.detachNewThread {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
          let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
          if count < 0 && errno == EINTR { continue }
          guard count > 0 else { break }
          shared.update { state in
            if isOutput {
              state.output.append(contentsOf: chunk[..<count])
            } else {
              state.error.append(contentsOf: chunk[..<count])
            }
          }
        }
        close(descriptor)
        shared.update { $0.openPipes -= 1 }
      }
    }
    Thread.detachNewThread { [pid] in
      // Marked as exited while still a zombie (WNOWAIT), so that no signal is sent once the pid
      // could belong to another process.
      var info = siginfo_t()
      while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
      shared.update { $0.exited = true }
      var status: Int32 = 0
      var reaped = waitpid(pid, &status, 0)
      while reaped < 0 && errno == EINTR { reaped = waitpid(pid, &status, 0) }
      // WIFSIGNALED, WTERMSIG and WEXITSTATUS are macros Swift does not import.
      let signal = status & 0x7f
      shared.update { $0.status = reaped < 0 ? -1 : signal != 0 ? 128 + signal : (status >> 8) & 0xff }
    }
  }

  /// Held while pipes are made and a program spawned.
  private static let spawning = Mutex(())

  /// Makes a pipe whose two ends close on exec.
  private static func pipe(_ ends: inout [Int32]) -> Bool {
    guard Glibc.pipe(&ends) == 0 else { return false }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    return true
  }

  /// A program still running when the test lets go of it (a test that failed before waiting)
  /// is killed.
  deinit { send(SIGKILL) }

  /// Sends `signal` to the program unless it has exited.
  private func send(_ signal: Int32) {
    shared.state.withLock { if !$0.exited { kill(pid, signal) } }
  }

  /// Runs a program to its end within `seconds` (see ``exit(within:sourceLocation:)``).
  public static func run(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], within seconds: Double,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Exit {
    try await Subprocess(executable, arguments, environment: environment)
      .exit(within: seconds, sourceLocation: sourceLocation)
  }

  /// Waits until the program has exited and closed its output. At the deadline it is ended and
  /// ``DeadlineExceeded`` names it and quotes its standard error.
  public func exit(within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Exit {
    try await wait(within: seconds, for: "`\(command)` to exit", sourceLocation: sourceLocation) { $0.hasEnded }
    return shared.state.withLock { $0.exit }
  }

  /// The CPU time the program has used so far, user and system, all threads (`utime` and
  /// `stime` of `/proc/PID/stat`), in seconds; nil once it has exited.
  public var cpuSeconds: Double? {
    shared.state.withLock { state -> Double? in
      guard !state.exited, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
      else { return nil }
      // After the command's name (in parentheses, maybe with spaces): state is field 3, utime 14, stime 15.
      let fields = stat[stat.index(after: end)...].split(separator: " ")
      guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
      return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
  }

  /// The program's resident memory (`VmRSS` of `/proc/PID/status`), KiB; nil once it has
  /// exited.
  public var residentMemory: Int? {
    shared.state.withLock { state -> Int? in
      guard !state.exited, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
        return nil
      }
      let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
      return line?.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
    }
  }

  /// Waits until the program's standard error contains `text`. Throws when it exits without
  /// writing it, and at the deadline (ending it), quoting its standard error.
  public func waitForError(
    containing text: String, within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    let seen = { @Sendable (state: State) in String(decoding: state.error, as: UTF8.self).contains(text) }
    try await wait(within: seconds, for: "`\(command)` to write \"\(text)\"", sourceLocation: sourceLocation) {
      seen($0) || $0.hasEnded
    }
    let (found, exit) = shared.state.withLock { (seen($0), $0.exit) }
    if !found {
      throw DeadlineExceeded(
        "`\(command)` exited (status \(exit.status)) without writing \"\(text)\""
          + " (\(sourceLocation.fileName):\(sourceLocation.line)); its standard error:\n\(Self.tail(exit.error))")
    }
  }

  /// Waits until the program's standard output contains `text`, and returns what it wrote there
  /// so far. Throws when it exits without writing it, and at the deadline (ending it), quoting
  /// its standard error.
  @discardableResult
  public func waitForOutput(
    containing text: String, within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> String {
    try await waitForOutput(within: seconds, for: "\"\(text)\"", sourceLocation: sourceLocation) { $0.contains(text) }
  }

  /// Waits until what the program wrote to standard output so far satisfies `condition`, and
  /// returns it. Throws when it exits first, and at the deadline (ending it), quoting its
  /// standard error.
  @discardableResult
  public func waitForOutput(
    within seconds: Double, for what: String, sourceLocation: SourceLocation = #_sourceLocation,
    until condition: @escaping @Sendable (String) -> Bool
  ) async throws -> String {
    let seen = { @Sendable (state: State) in condition(String(decoding: state.output, as: UTF8.self)) }
    try await wait(within: seconds, for: "`\(command)` to print \(what)", sourceLocation: sourceLocation) {
      seen($0) || $0.hasEnded
    }
    let (found, exit) = shared.state.withLock { (seen($0), $0.exit) }
    if !found {
      throw DeadlineExceeded(
        "`\(command)` exited (status \(exit.status)) without printing \(what)"
          + " (\(sourceLocation.fileName):\(sourceLocation.line)); its standard error:\n\(Self.tail(exit.error))")
    }
    return exit.output
  }

  /// Ends the program now if it still runs: SIGTERM, then SIGKILL when it has not exited
  /// within `grace` seconds. Returns how it ended.
  @discardableResult public func stop(grace: Double = 2) async -> Exit {
    send(SIGTERM)
    if (try? await withDeadline(grace, "`\(command)` to end on SIGTERM", { await self.until(\.exited) })) == nil {
      send(SIGKILL)
    }
    // SIGKILL cannot be refused; the pipes close unless the program left children holding them.
    _ = try? await withDeadline(10, "`\(command)` to end on SIGKILL") { await self.until(\.hasEnded) }
    return shared.state.withLock { $0.exit }
  }

  /// Waits until `condition` holds, within `seconds`; at the deadline ends the program and
  /// throws, quoting its standard error.
  private func wait(
    within seconds: Double, for what: String, sourceLocation: SourceLocation,
    until condition: @escaping @Sendable (State) -> Bool
  ) async throws {
    do {
      try await withDeadline(seconds, what, sourceLocation: sourceLocation) { await self.until(condition) }
    } catch let error as DeadlineExceeded {
      let exit = await stop()
      throw DeadlineExceeded("\(error); ended it; its standard error:\n\(Self.tail(exit.error))")
    }
  }

  /// Returns once `condition` holds (or the task is cancelled).
  private func until(_ condition: @escaping @Sendable (State) -> Bool) async {
    let id = shared.state.withLock { state in
      defer { state.nextWaiter += 1 }
      return state.nextWaiter
    }
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        let ready = shared.state.withLock { state in
          if condition(state) || Task.isCancelled { return true }
          state.waiters[id] = (condition, continuation)
          return false
        }
        if ready { continuation.resume() }
      }
    } onCancel: {
      shared.state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
    }
  }

  /// The last lines of a program's standard error, enough to say why it failed.
  private static func tail(_ text: String) -> String {
    guard !text.isEmpty else { return "(nothing)" }
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    return (lines.count > 40 ? ["…"] + lines.suffix(40) : lines[...]).joined(separator: "\n")
  }
}

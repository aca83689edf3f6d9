import Foundation
import Glibc
import RevueProcess
import RevueTestSupport
import Testing

/// The runner of child processes that the bench and the tests share: what a child writes, its
/// status and environment, deadlines, and that no child outlives its owner. Every wait has a
/// deadline; the children that would run long are `sleep 60`, stopped long before.
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct ChildProcessTests {
  static let shell = URL(fileURLWithPath: "/bin/sh")

  @Test func collectsOutputErrorAndTheStatus() async throws {
    let exit = try await ChildProcess.run(Self.shell, ["-c", "echo out; echo err >&2; exit 3"], within: 10)
    #expect(exit.status == 3 && !exit.succeeded && !exit.wasStopped && !exit.timedOut)
    #expect(exit.output == "out\n" && exit.error == "err\n")
    #expect(exit.ended != nil)
    let discarded = try ChildProcess(Self.shell, ["-c", "echo out; echo err >&2"], output: .discard)
    let quiet = try await discarded.exit(within: 10)
    #expect(quiet.status == 0 && quiet.succeeded && quiet.output.isEmpty && quiet.error == "err\n")
  }

  /// `PATH` is set in every process, `GST_TRACERS` in every test process (``TestEnvironment``);
  /// the bench takes it away from the `revue` it measures.
  @Test func theEnvironmentIsThisProcesssWithTheChangesLaidOver() async throws {
    let exit = try await ChildProcess.run(
      Self.shell, ["-c", "echo ${PATH:+kept} ${GST_TRACERS-unset} $REVUE_PROCESS_ADDED"],
      environment: ["GST_TRACERS": nil, "REVUE_PROCESS_ADDED": "added"], within: 10)
    #expect(exit.output == "kept unset added\n")
  }

  @Test func aPipedInputIsReadToItsEnd() async throws {
    let cat = try ChildProcess(URL(fileURLWithPath: "/bin/cat"), input: .pipe)
    let text = Array("frames".utf8)
    #expect(text.withUnsafeBytes { write(cat.inputDescriptor, $0.baseAddress, $0.count) } == text.count)
    cat.closeInput()
    let exit = try await cat.exit(within: 10)
    #expect(exit.status == 0 && exit.output == "frames")
  }

  @Test func waitsForWhatItWritesWithoutEndingIt() async throws {
    let child = try ChildProcess(Self.shell, ["-c", "echo ready; exec sleep 60"])
    #expect(await child.wait(within: 10, until: { $0.output.contains("ready") }) == .satisfied)
    #expect(await child.wait(within: 0.1, until: { $0.output.contains("never") }) == .timedOut)
    #expect(try #require(child.cpuSeconds) >= 0)
    #expect(try #require(child.reading).threads == 1)
    let exit = await child.stop()
    #expect(exit.status == 128 + SIGTERM && exit.wasStopped && exit.succeeded && !exit.timedOut)
    #expect(child.cpuSeconds == nil && child.reading == nil, "nothing is read of a pid that is no longer its")
    let quitter = try ChildProcess(Self.shell, ["-c", "echo bye"])
    #expect(await quitter.wait(within: 10, until: { $0.output.contains("never") }) == .ended)
    // Stopping one that has ended leaves its own failure a failure.
    let failed = try ChildProcess(Self.shell, ["-c", "exit 4"])
    _ = try await failed.exit(within: 10)
    let stopped = await failed.stop()
    #expect(stopped.status == 4 && !stopped.wasStopped && !stopped.succeeded)
  }

  @Test func aDeadlineStopsItWithItsSignalThenSIGKILL() async throws {
    let child = try ChildProcess(Self.shell, ["-c", "exec sleep 60"])
    // waits-on-purpose: the deadlines are what is tested.
    let exit = await child.wait(stoppingAfter: 0.2)
    #expect(exit.timedOut && exit.wasStopped && exit.status == 128 + SIGTERM)
    // One that ignores the signal is killed after the grace.
    let stubborn = try ChildProcess(
      Self.shell, ["-c", "trap '' INT; echo ready; exec sleep 60"],
      stopping: ChildProcess.Stopping(signal: SIGINT, grace: 0.2))
    #expect(await stubborn.wait(within: 10, until: { $0.output.contains("ready") }) == .satisfied)
    #expect(await stubborn.wait(stoppingAfter: 0.1).status == 128 + SIGKILL)
    await #expect(throws: DeadlineExceeded.self) {
      try await ChildProcess(Self.shell, ["-c", "exec sleep 60"]).exit(within: 0.2)
    }
  }

  /// Returns once process `pid` has ended: `tail --pid` ends with it.
  static func ended(_ pid: Int32) throws -> ChildProcess {
    try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/tail"), ["--pid", "\(pid)", "--sleep-interval", "0.05", "-f", "/dev/null"])
  }

  /// A child let go of while it runs is killed, and so is one whose waiting task is cancelled.
  @Test func noChildOutlivesItsOwner() async throws {
    var child: ChildProcess? = try ChildProcess(Self.shell, ["-c", "exec sleep 60"])
    let watcher = try Self.ended(child!.pid)
    // waits-on-purpose: a watcher that ended at once would prove nothing.
    #expect(await watcher.wait(within: 0.2, until: { _ in false }) == .timedOut, "the watcher waits while it runs")
    child = nil
    _ = try await watcher.exit(within: 10)

    let waited = try ChildProcess(Self.shell, ["-c", "exec sleep 60"])
    let waiting = Task { await waited.wait() }
    waiting.cancel()
    // A wait that ignored cancellation would last the child's minute: 10 s say so sooner.
    #expect(try await withDeadline(10, "the cancelled wait") { await waiting.value }.wasStopped)
    _ = try await Self.ended(waited.pid).exit(within: 10)
  }

  @Test func peakMemoryIsTrackedWhenAsked() async throws {
    let tracked = try ChildProcess(Self.shell, ["-c", "exec sleep 60"], tracksPeakMemory: true)
    // waits-on-purpose: the memory is read every 20 ms while the child runs.
    let exit = await tracked.wait(stoppingAfter: 0.1)
    #expect((exit.peakResidentKiB ?? 0) > 0 && (exit.peakPrivateKiB ?? 0) > 0)
    #expect(try await ChildProcess.run(Self.shell, ["-c", "echo"], within: 10).peakResidentKiB == nil)
  }

  @Test func aProgramThatCannotStartSaysWhich() {
    #expect(throws: ChildProcess.StartError.self) { try ChildProcess(URL(fileURLWithPath: "/nonexistent/program")) }
  }
}

import Foundation
import RevueProcess
import Testing

/// A network namespace the test makes for itself, joined to this one by a veth pair on a /30 of
/// its own (10.233.N.0): a peer run inside (``command(_:)``) is another host on a real link, and
/// `tc tbf` on this side of the pair caps what is sent to it (the kernel here has no `netem`,
/// but `tbf` works). Needs root, as CI and this machine run the tests; nothing leaves the
/// machine. ``remove()`` deletes the namespace and with it the pair.
public final class NetworkNamespace: Sendable {
  /// The namespace's name (`revue-PID-N`).
  public let name: String
  /// The address of this side of the pair.
  public let hostAddress: String
  /// The address inside the namespace.
  public let address: String
  /// The interface on this side, whose egress ``cap(kilobitsPerSecond:bufferMilliseconds:)`` shapes.
  private let interface: String

  /// Makes a namespace with its link up, within 10 s.
  public static func make() async throws -> NetworkNamespace {
    // A subnet per namespace: two tests at once in one process, or two processes, do not meet.
    let subnet = Int.random(in: 0..<64) * 4 + Int(getpid() % 4)
    let namespace = NetworkNamespace(subnet: subnet)
    let inside = "rv\(subnet)b"
    do {
      try await ip(["netns", "add", namespace.name])
      try await ip(["link", "add", namespace.interface, "type", "veth", "peer", "name", inside])
      try await ip(["link", "set", inside, "netns", namespace.name])
      try await ip(["addr", "add", "\(namespace.hostAddress)/30", "dev", namespace.interface])
      try await ip(["link", "set", namespace.interface, "up"])
      try await ip(["-n", namespace.name, "addr", "add", "\(namespace.address)/30", "dev", inside])
      try await ip(["-n", namespace.name, "link", "set", inside, "up"])
      try await ip(["-n", namespace.name, "link", "set", "lo", "up"])
    } catch {
      await namespace.remove()
      throw error
    }
    return namespace
  }

  private init(subnet: Int) {
    name = "revue-\(getpid())-\(subnet)"
    interface = "rv\(subnet)a"
    hostAddress = "10.233.\(subnet / 4).\(subnet % 4 * 64 + 1)"
    address = "10.233.\(subnet / 4).\(subnet % 4 * 64 + 2)"
  }

  /// Caps what this side sends into the namespace at `kilobitsPerSecond`, with a bottleneck
  /// buffer of `bufferMilliseconds` at that rate (`tc tbf`: a token bucket; packets beyond the
  /// buffer are dropped, as a router's queue drops them).
  public func cap(kilobitsPerSecond: Int, bufferMilliseconds: Int) async throws {
    try await Self.run(
      "/usr/sbin/tc",
      [
        "qdisc", "replace", "dev", interface, "root", "tbf", "rate", "\(kilobitsPerSecond)kbit", "burst", "3000",
        "latency", "\(bufferMilliseconds)ms",
      ])
  }

  /// Lifts the cap.
  public func uncap() async throws {
    try await Self.run("/usr/sbin/tc", ["qdisc", "del", "dev", interface, "root"])
  }

  /// `arguments` run inside the namespace: `ip netns exec NAME arguments…`, for ``ChildProcess``.
  public func command(_ arguments: [String]) -> (URL, [String]) {
    (URL(fileURLWithPath: "/usr/sbin/ip"), ["netns", "exec", name] + arguments)
  }

  /// Deletes the namespace (and the pair with it).
  public func remove() async {
    _ = try? await Self.ip(["netns", "delete", name])
    _ = try? await Self.ip(["link", "delete", interface])
  }

  private static func ip(_ arguments: [String]) async throws {
    try await run("/usr/sbin/ip", arguments)
  }

  /// A command of the namespace's set-up that failed.
  public struct CommandFailed: Error, CustomStringConvertible {
    /// The command, its status and its standard error.
    public var description: String
  }

  /// Runs `program` to its end within 10 s; throws with its standard error when it fails.
  private static func run(_ program: String, _ arguments: [String]) async throws {
    let exit = try await ChildProcess.run(URL(fileURLWithPath: program), arguments, within: 10)
    guard exit.status == 0 else {
      throw NetworkNamespace.CommandFailed(
        description: "`\(program) \(arguments.joined(separator: " "))` failed (\(exit.status)): \(exit.error)")
    }
  }
}

import Foundation
import RevueProcess
import Testing

/// An X server of its own for a test (`Xvfb`, installed by `scripts/setup.sh`): no screen, no
/// TCP, the first free display number. Stop it when done.
public final class VirtualDisplay: Sendable {
  /// Its `DISPLAY`, such as `:1`.
  public let display: String
  private let server: ChildProcess

  /// Starts `Xvfb` and waits (up to `seconds`) until it takes connections: it prints its
  /// display number then (`-displayfd`).
  public init(width: Int = 1280, height: Int = 720, within seconds: Double = 15) async throws {
    server = try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/Xvfb"),
      ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "\(width)x\(height)x24"])
    let output = try await server.waitForOutput(within: seconds, for: "its display number") { $0.contains("\n") }
    display = ":" + output.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// Ends the server once this process holds no connection to it, waiting up to `seconds` for
  /// the last to close: Xlib ends a process whose X server goes away under one of its
  /// connections, and some close on a thread of their own after the view or capturer that
  /// opened them has gone (the display of an OpenGL attempt). Connections of child processes
  /// are not waited for: a child that draws is stopped before its display.
  /// - Throws: ``DeadlineExceeded`` when a connection is still open at the deadline (a view or
  ///   capturer that was not let go); the server is then left running, to end with the process.
  public func stop(within seconds: Double = 10) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    // Nothing tells when a socket closes: the connections are looked at every 50 ms.
    while case let open = try await connections(), open > 0 {
      guard ContinuousClock.now < deadline else {
        throw DeadlineExceeded(
          "this process still has \(open) connection(s) to display \(display) after \(seconds) s:"
            + " a view or capturer was not let go")
      }
      try await Task.sleep(for: .milliseconds(50))
    }
    await server.stop()
  }

  /// How many connections this process has open to the server now.
  public func connections() async throws -> Int {
    try await Self.connections(toDisplay: String(display.dropFirst().prefix { $0 != "." }))
  }

  /// How many of this process's sockets are connected to the X server of display `number`: the
  /// server's ends of its connections (`ss -x`, the server's socket path as local address) whose
  /// peers are sockets this process holds.
  static func connections(toDisplay number: String) async throws -> Int {
    let fileDescriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    let mine = Set(
      fileDescriptors.compactMap { descriptor -> Substring? in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"),
          target.hasPrefix("socket:[")
        else { return nil }
        return target.dropFirst("socket:[".count).dropLast()
      }.map(String.init))
    let listing = try await ChildProcess.run(URL(fileURLWithPath: "/bin/ss"), ["-xH"], within: 5).output
    let path = "/tmp/.X11-unix/X\(number)"
    // `u_str ESTAB 0 0 @/tmp/.X11-unix/X0 1160777 * 1160776`: the server's end, then its peer.
    return listing.split(separator: "\n").count { line in
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      guard fields.count >= 8, fields[4] == path || fields[4] == "@" + path else { return false }
      return mine.contains(String(fields[7]))
    }
  }
}

/// A Wayland compositor of its own for a test (Weston's headless backend, installed by
/// `scripts/setup.sh`), its socket in a runtime directory of its own. Stop it when done.
public final class VirtualWaylandDisplay: Sendable {
  /// The path of its socket: what a view takes as its display.
  public let socket: String
  private let directory: String
  private let server: ChildProcess

  /// Starts Weston and waits (up to `seconds`) until its shell is loaded, its socket made.
  public init(width: Int = 640, height: Int = 480, within seconds: Double = 15) async throws {
    var template = Array("/tmp/revue-wayland-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw DeadlineExceeded("cannot make a runtime directory for Weston") }
    directory = String(cString: made)
    socket = directory + "/wayland-revue"
    server = try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/weston"),
      [
        "--backend=headless-backend.so", "--shell=kiosk-shell.so", "--socket=wayland-revue", "--width=\(width)",
        "--height=\(height)", "--idle-time=0",
      ], environment: ["XDG_RUNTIME_DIR": directory])
    try await server.waitForError(containing: "kiosk-shell.so'", within: seconds)
    guard FileManager.default.fileExists(atPath: socket) else {
      await server.stop()
      throw DeadlineExceeded("Weston loaded its shell but made no socket at \(socket)")
    }
  }

  /// Ends the compositor and removes its runtime directory.
  public func stop() async {
    await server.stop()
    try? FileManager.default.removeItem(atPath: directory)
  }
}

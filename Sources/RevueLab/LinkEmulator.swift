import Dispatch
import Foundation
import Glibc
import RevueSDK
import Synchronization

/// A user-space UDP relay that makes a bad link between an RTP sender and its receiver (the
/// kernel here has no `netem`).
///
/// The sender sends to `127.0.0.1:port+k`; the emulator forwards each packet, impaired by
/// ``forward``, to `host:destinationPort+k` from a socket of its own for each port. Whatever the
/// receiver sends back to that socket (RTCP reports, NACK, PLI) is forwarded, impaired by
/// ``backward``, to the address the latest packet on `port+k` came from, from `port+k` itself:
/// RTCP stays symmetric.
///
/// One thread per emulator relays the packets (a `poll` loop); the same `seed` and the same
/// packets give the same random draws (four per packet, each direction its own generator), so
/// the same packets are lost, reordered and duplicated. At most ``waitingLimit`` packets (or
/// ``waitingByteLimit`` bytes) wait in each direction: more are dropped and counted as
/// ``Counters/droppedByQueue``.
public final class LinkEmulator: Sendable {
  /// What happened to the packets of one direction since the start.
  public struct Counters: Sendable, Hashable {
    /// Packets that came into the emulator.
    public var packetsIn = 0
    /// Their bytes (UDP payload).
    public var bytesIn = 0
    /// Packets lost at random (``LinkConditions/loss``).
    public var lost = 0
    /// Packets dropped because the bottleneck's buffer was full (``LinkConditions/queue``), or
    /// ``LinkEmulator/waitingLimit`` packets were already waiting.
    public var droppedByQueue = 0
    /// Packets dropped by an outage (``LinkConditions/isDown``).
    public var droppedByOutage = 0
    /// Packets sent twice (``LinkConditions/duplicate``).
    public var duplicated = 0
    /// Packets sent on, duplicates included.
    public var packetsOut = 0
    /// Their bytes.
    public var bytesOut = 0
    /// Packets that could not be sent on: a backward packet before any forward packet on its
    /// port told where to send it, or a send the kernel refused.
    public var undeliverable = 0
    /// Packets in the emulator now, waiting to leave.
    public var waiting = 0
    /// When the first packet was sent on (at the receiver's end of the link, less the loopback's
    /// microseconds); nil until one was.
    public var firstOut: ContinuousClock.Instant? = nil

    /// No packets yet.
    public init() {}
  }

  /// At most this many packets wait in each direction; more are dropped (``Counters/droppedByQueue``).
  public static let waitingLimit = 20_000
  /// At most this many bytes wait in each direction; more are dropped (``Counters/droppedByQueue``).
  public static let waitingByteLimit = 64 << 20

  /// The first port senders send to (on 127.0.0.1); the emulator listens on `port..<port + 2 * pairs`.
  public let port: Int
  /// How many port pairs (RTP and RTCP) are relayed.
  public let pairs: Int

  private let shared: LinkShared
  private let wakeWrite: Int32
  private let stopped = Mutex(false)

  /// Starts relaying `pairs` port pairs: packets to `127.0.0.1:port+k` (`k < 2 * pairs`) go to
  /// `host:destinationPort+k`, and what comes back goes back.
  ///
  /// - Parameters:
  ///   - port: the first port to listen on (on 127.0.0.1); 0 picks an even port with `2 * pairs` free ports.
  ///   - pairs: how many RTP and RTCP port pairs to relay.
  ///   - host: the receiver's numeric IPv4 address, such as `127.0.0.1` (no host names).
  ///   - destinationPort: the receiver's first port.
  ///   - forward: the conditions from the sender to the receiver.
  ///   - backward: the conditions from the receiver back to the sender.
  ///   - seed: the seed of the random draws; the same seed and packets drop the same packets.
  ///   - tap: when set, every forward packet that comes in is also copied at once, unimpaired,
  ///     to `host:tap+k` from a socket of its own (what comes back to that socket is dropped), for
  ///     a reference receiver that sees exactly what the sender sent.
  /// - Throws: `RevueError` (`.invalidInput`) when a port is in use or out of range, or `host`
  ///   is not a numeric IPv4 address.
  public convenience init(
    listeningOn port: Int = 0, pairs: Int = 1, to host: String, port destinationPort: Int,
    forward: LinkConditions = .perfect,
    backward: LinkConditions = .perfect, seed: UInt64, tap: Int? = nil
  ) throws {
    try self.init(
      listeningOn: port, pairs: pairs, to: host, port: destinationPort, forward: forward, backward: backward,
      seed: seed,
      tap: tap, limits: (Self.waitingLimit, Self.waitingByteLimit))
  }

  /// The public initializer with other waiting limits (for tests).
  init(
    listeningOn port: Int, pairs: Int, to host: String, port destinationPort: Int, forward: LinkConditions,
    backward: LinkConditions, seed: UInt64, tap: Int?, limits: (packets: Int, bytes: Int)
  ) throws {
    guard pairs >= 1 else { throw RevueError(.invalidInput, "a link relays at least one port pair, not \(pairs)") }
    let count = 2 * pairs
    guard port == 0 || (1...(65_536 - count)).contains(port) else {
      throw RevueError(.invalidInput, "port \(port) is out of range for \(pairs) port pairs")
    }
    for (name, first) in [("port", destinationPort), ("tap port", tap)] as [(String, Int?)] {
      guard let first, !(1...(65_536 - count)).contains(first) else { continue }
      throw RevueError(.invalidInput, "\(name) \(first) is out of range for \(pairs) port pairs")
    }
    var address = in_addr()
    guard inet_pton(AF_INET, host, &address) == 1 else {
      throw RevueError(.invalidInput, "'\(host)' is not a numeric IPv4 address")
    }
    // A socket bound to 127.0.0.1 can send only to loopback.
    let isLoopback = UInt32(bigEndian: address.s_addr) >> 24 == 127
    let sockets = OpenSockets()
    let listening = try sockets.listen(port: port, count: count)
    let relaying = try (0..<count).map { _ in try sockets.open(loopbackOnly: isLoopback) }
    let tapping = try tap.map { _ in try sockets.open(loopbackOnly: isLoopback) }
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else {
      throw RevueError(.invalidState, "cannot make a pipe: \(String(cString: strerror(errno)))")
    }
    for end in ends {
      _ = fcntl(end, F_SETFL, O_NONBLOCK)
      _ = fcntl(end, F_SETFD, FD_CLOEXEC)
    }
    sockets.release()

    self.port = listening.port
    self.pairs = pairs
    self.wakeWrite = ends[1]
    let shared = LinkShared(forward: forward, backward: backward)
    self.shared = shared
    let setup = RelaySetup(
      listening: listening.descriptors, relaying: relaying, tapping: tapping, wake: ends[0], host: address.s_addr,
      destinationPort: destinationPort, tapPort: tap, seed: seed, limits: limits)
    let thread = Thread {
      do {
        var relay = LinkRelay(setup, shared)
        relay.run()
      }  // its sockets are closed here
      shared.finished.signal()
    }
    thread.name = "revue.link.\(listening.port)"
    thread.start()
  }

  deinit { stop() }

  /// The conditions from the sender to the receiver; a change applies to the packets that come
  /// after it (an outage also to the packets on their way). Any thread can change them at any time;
  /// setting one field (`emulator.forward.isDown = true`) reads then writes the whole conditions, so
  /// threads that change them at once should set whole conditions.
  public var forward: LinkConditions {
    get { shared.conditions.withLock { $0.forward } }
    set { shared.conditions.withLock { $0.forward = newValue } }
  }

  /// The conditions from the receiver back to the sender, as ``forward``.
  public var backward: LinkConditions {
    get { shared.conditions.withLock { $0.backward } }
    set { shared.conditions.withLock { $0.backward = newValue } }
  }

  /// Cuts the link both ways for `duration` (an outage: every packet is dropped), then brings it
  /// back as it was. Returns at once; the returned stream yields the instant the link came back
  /// and ends.
  @discardableResult
  public func cut(for duration: Duration) -> AsyncStream<ContinuousClock.Instant> {
    let (restored, continuation) = AsyncStream.makeStream(of: ContinuousClock.Instant.self)
    shared.conditions.withLock { conditions in
      conditions.forward.isDown = true
      conditions.backward.isDown = true
    }
    let shared = self.shared
    let nanoseconds = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
      shared.conditions.withLock { conditions in
        conditions.forward.isDown = false
        conditions.backward.isDown = false
      }
      continuation.yield(.now)
      continuation.finish()
    }
    return restored
  }

  /// What happened to the packets so far, each way (updated as the relay thread handles them).
  public var statistics: (forward: Counters, backward: Counters) {
    shared.counters.withLock { ($0.forward, $0.backward) }
  }

  /// Stops relaying: ends the thread and closes every socket (the ports are free once it returns).
  /// Packets still waiting are dropped. Calling it again does nothing; `deinit` calls it.
  public func stop() {
    stopped.withLock { stopped in
      guard !stopped else { return }
      stopped = true
      var byte: UInt8 = 1
      _ = write(wakeWrite, &byte, 1)
      shared.finished.wait()
      close(wakeWrite)
    }
  }
}

/// What the emulator and its relay thread share.
final class LinkShared: Sendable {
  let conditions: Mutex<(forward: LinkConditions, backward: LinkConditions)>
  let counters = Mutex((forward: LinkEmulator.Counters(), backward: LinkEmulator.Counters()))
  /// Signalled once the relay thread has closed its sockets and ended.
  let finished = DispatchSemaphore(value: 0)

  init(forward: LinkConditions, backward: LinkConditions) {
    conditions = Mutex((forward, backward))
  }
}

/// Sockets being opened for an emulator: all closed again unless released (when one fails).
private final class OpenSockets {
  private var descriptors: [Int32] = []

  deinit { for descriptor in descriptors { close(descriptor) } }

  /// Keeps the sockets open: they are the relay thread's now.
  func release() { descriptors = [] }

  /// `count` sockets on 127.0.0.1 from `port` (0: the first even port of `count` free ones).
  func listen(port: Int, count: Int) throws -> (port: Int, descriptors: [Int32]) {
    if port != 0 { return (port, try (0..<count).map { try open(port: port + $0) }) }
    // An ephemeral port from the kernel (32768-60999 here), out of the way of fixed ports; kept
    // when it is even and the next ones are free.
    for _ in 0..<200 {
      let first = try open(port: 0)
      let chosen = Self.boundPort(first)
      guard chosen % 2 == 0, chosen + count <= 65_536 else {
        discard(from: descriptors.count - 1)
        continue
      }
      var rest: [Int32] = []
      for offset in 1..<count {
        guard let next = try? open(port: chosen + offset) else { break }
        rest.append(next)
      }
      if rest.count == count - 1 { return (chosen, [first] + rest) }
      discard(from: descriptors.count - 1 - rest.count)
    }
    throw RevueError(.invalidState, "found no \(count) free consecutive UDP ports on 127.0.0.1")
  }

  /// A UDP socket bound to 127.0.0.1 (or every address) at `port` (0: any), with large buffers.
  func open(port: Int = 0, loopbackOnly: Bool = true) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else {
      throw RevueError(.invalidState, "cannot open a UDP socket: \(String(cString: strerror(errno)))")
    }
    descriptors.append(descriptor)
    // Large buffers, so that the kernel does not drop a burst before the relay thread reads it
    // (capped by net.core.rmem_max and wmem_max).
    var size: Int32 = 4 << 20
    for option in [SO_RCVBUF, SO_SNDBUF] {
      _ = setsockopt(descriptor, SOL_SOCKET, option, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = loopbackOnly ? UInt32(0x7F00_0001).bigEndian : INADDR_ANY
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else {
      let code = errno
      discard(from: descriptors.count - 1)
      if code == EADDRINUSE { throw RevueError(.invalidInput, "port \(port) is in use") }
      throw RevueError(.invalidInput, "cannot bind UDP port \(port): \(String(cString: strerror(code)))")
    }
    return descriptor
  }

  /// Closes the sockets opened from `index` on.
  private func discard(from index: Int) {
    for descriptor in descriptors[index...] { close(descriptor) }
    descriptors.removeSubrange(index...)
  }

  /// The port a socket is bound to.
  static func boundPort(_ descriptor: Int32) -> Int {
    var address = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
  }
}

import Foundation
import Glibc
import RevueCommandLine
import RevueSDK
import Synchronization

/// UDP sockets on loopback that take the RTP a sender sends, in the bench's own process so that
/// neither side pays for them: they count packets and frames (a packet with the RTP marker bit
/// ends a VP8 or H.264 frame) and stamp their arrival; one can pass every datagram on to
/// another port (to a receiver).
final class PacketSink: Sendable {
  /// What one socket has seen.
  struct Counts: Sendable {
    var packets = 0
    /// Arrival of each frame's last packet, on the monotonic clock.
    var frames: [UInt64] = []
    /// Arrival of the first datagram.
    var first: UInt64?
  }

  /// The first port; socket `i` is on `port + 2 * i` (as a Room publishes one track per port pair).
  let port: Int
  private let sockets: [Int32]
  private let counts: Mutex<[Counts]>
  private let waiters = Mutex<[(frames: Int, continuation: CheckedContinuation<UInt64?, Never>)]>([])
  private let stopped = Atomic<Bool>(false)
  private let finished = DispatchSemaphore(value: 0)

  /// Binds `count` sockets on 127.0.0.1 at a random even port and the even ports above it,
  /// trying other ports while one is in use.
  /// - Parameter relay: a port on 127.0.0.1 that every datagram of the first socket goes on to.
  /// - Throws: ``RevueError`` when no free ports were found.
  init(count: Int = 1, relay: Int? = nil) throws {
    var bound: [Int32] = []
    var first = 0
    for _ in 0..<50 {
      first = 2 * Int.random(in: 10_000..<30_000 - count)
      bound = []
      for index in 0..<count {
        guard let socket = Self.bind(port: first + 2 * index) else { break }
        bound.append(socket)
      }
      if bound.count == count { break }
      for socket in bound { close(socket) }
      bound = []
    }
    guard bound.count == count else { throw RevueError(.invalidState, "no free UDP ports on 127.0.0.1") }
    port = first
    sockets = bound
    counts = Mutex([Counts](repeating: Counts(), count: count))
    for (index, socket) in bound.enumerated() {
      Thread { [self] in receive(on: socket, index: index, relay: index == 0 ? relay : nil) }.start()
    }
  }

  /// A UDP socket bound to 127.0.0.1:`port` with a short receive timeout, or nil when the port is in use.
  fileprivate static func bind(port: Int) -> Int32? {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard socket >= 0 else { return nil }
    var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var size: Int32 = 4 << 20
    setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    var address = Self.loopback(port: port)
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard result == 0 else {
      close(socket)
      return nil
    }
    return socket
  }

  /// 127.0.0.1:`port` as a socket address.
  private static func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    return address
  }

  /// The receiving loop of one socket, until ``stop()``.
  private func receive(on socket: Int32, index: Int, relay: Int?) {
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var target = relay.map(Self.loopback(port:))
    while !stopped.load(ordering: .relaxed) {
      let size = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
      guard size > 0 else { continue }
      let now = monotonicNanoseconds()
      if target != nil {
        _ = buffer.withUnsafeBytes { bytes in
          withUnsafePointer(to: &target!) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
              sendto(socket, bytes.baseAddress, size, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
          }
        }
      }
      let endsFrame = size >= 12 && buffer[0] >> 6 == 2 && buffer[1] & 0x80 != 0
      let frames = counts.withLock { counts in
        counts[index].packets += 1
        if counts[index].first == nil { counts[index].first = now }
        if endsFrame { counts[index].frames.append(now) }
        return counts.map(\.frames.count).min() ?? 0
      }
      if endsFrame { wake(frames: frames, at: now) }
    }
    close(socket)
    finished.signal()
  }

  /// Resumes the waiters whose frame count every socket has reached.
  private func wake(frames: Int, at time: UInt64?) {
    let ready = waiters.withLock { waiters in
      let ready = waiters.filter { time == nil || $0.frames <= frames }
      waiters.removeAll { time == nil || $0.frames <= frames }
      return ready
    }
    for waiter in ready { waiter.continuation.resume(returning: time) }
  }

  /// Waits until every socket has had `frames` frames, and returns when; nil when the sink is
  /// stopped or given up on (``giveUp()``) first.
  func waitForFrames(_ frames: Int) async -> UInt64? {
    await withCheckedContinuation { continuation in
      // Checked under the waiters' lock: a frame that ends now wakes this waiter or is seen here.
      let now: UInt64?? = waiters.withLock { waiters in
        if counts.withLock({ $0.map(\.frames.count).min() ?? 0 }) >= frames { return .some(monotonicNanoseconds()) }
        if stopped.load(ordering: .relaxed) { return .some(nil) }
        waiters.append((frames, continuation))
        return nil
      }
      if let now { continuation.resume(returning: now) }
    }
  }

  /// Resumes every waiter with nil (the sender is gone).
  func giveUp() { wake(frames: .max, at: nil) }

  /// What each socket has seen so far.
  var all: [Counts] { counts.withLock { $0 } }

  /// Stops receiving and closes the sockets (call it: the receiving threads keep the sink alive).
  func stop() {
    guard !stopped.exchange(true, ordering: .relaxed) else { return }
    giveUp()
    for _ in sockets { finished.wait() }
  }
}

/// Ports for receivers that bind their own sockets.
extension PacketSink {
  /// A random even port on 127.0.0.1 whose pair (it and the next) was free a moment ago, for a
  /// receiver that binds it itself.
  static func freePort() throws -> Int {
    for _ in 0..<50 {
      let port = 2 * Int.random(in: 10_000..<30_000)
      guard let first = bind(port: port) else { continue }
      defer { close(first) }
      guard let second = bind(port: port + 1) else { continue }
      close(second)
      return port
    }
    throw RevueError(.invalidState, "no free UDP ports on 127.0.0.1")
  }
}

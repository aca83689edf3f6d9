import Foundation
import Synchronization

/// UDP ports for tests that send RTP, so that tests running at once (in this process, or in
/// other test runs on this machine) do not receive each other's packets.
public enum FreePorts {
  /// The next candidate port; it starts at a random even port so that test processes started
  /// together do not walk the same ports. Tests' ports stay in 10000–19999, below the ports
  /// `revue`'s own children pick at random (demo, bench: 20000 and up) and the kernel's
  /// (32768 and up): a test's port found free could otherwise be taken by a `revue demo` run
  /// by a parallel test before the test's receiver bound it (seen once in a parallel run).
  private static let next = Mutex(2 * Int.random(in: lowest / 2..<highest / 2))
  private static let lowest = 10_000
  private static let highest = 20_000

  /// The first port of `pairs` consecutive even (RTP) and odd (RTCP) ports that no other test of
  /// this process was given and that nothing on this machine had bound when asked.
  public static func rtp(pairs: Int = 1) -> Int {
    next.withLock { next in
      while true {
        let first = next
        next += 2 * pairs
        if next + 2 * pairs > highest { next = lowest }
        if (first..<(first + 2 * pairs)).allSatisfy(isFree) { return first }
      }
    }
  }

  /// A TCP port nothing listens on now (the kernel's pick).
  public static func tcp() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  /// Whether a UDP socket can bind `port` on every address now.
  private static func isFree(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = INADDR_ANY
    return withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }
}

import Foundation
import RevueSDK

#if canImport(Glibc)
  import Glibc
#endif

/// A UDP socket of its own that sends datagrams over IPv4, from an address of this machine of
/// the caller's choice (another loopback address, such as 127.0.0.2, stands for another host).
public final class UDPSender: Sendable {
  private let descriptor: Int32

  /// A socket bound to `source`'s `port` (an ephemeral one by default).
  /// - Throws: ``RevueError`` when the socket cannot be opened or `source` is not an IPv4
  ///   address of this machine.
  public init(from source: String = "0.0.0.0", port: Int = 0) throws(RevueError) {
    descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard descriptor >= 0 else { throw RevueError(.invalidState, "cannot open a socket: errno \(errno)") }
    do throws(RevueError) {
      var address = try Self.address(source, port: port)
      let bound = withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
      guard bound == 0 else {
        throw RevueError(.invalidInput, "cannot bind a socket to \(source):\(port): errno \(errno)")
      }
    } catch {
      close(descriptor)
      throw error
    }
  }

  deinit { close(descriptor) }

  /// Sends `bytes` to `host`'s `port`; returns whether the system took it.
  @discardableResult
  public func send(_ bytes: [UInt8], to host: String, port: Int) -> Bool {
    guard var address = try? Self.address(host, port: port) else { return false }
    return withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    } == bytes.count
  }

  private static func address(_ host: String, port: Int) throws(RevueError) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
      throw RevueError(.invalidInput, "not an IPv4 address: \(host)")
    }
    return address
  }
}

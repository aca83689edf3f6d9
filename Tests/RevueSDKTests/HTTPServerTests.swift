import Foundation
import RevueTestSupport
import Testing

@testable import RevueSDK

/// The WebRTC viewers' HTTP server on hostile clients: each request that is malformed, too large
/// or too slow gets its status and closes, and the server goes on answering.
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct HTTPServerTests {
  /// A server that answers every request with its method, path and body.
  static func echo(deadline: Duration = .seconds(5)) throws -> HTTPServer {
    try HTTPServer(address: "127.0.0.1", port: 0, deadline: deadline) { request in
      .text(200, "\(request.method) \(request.path) \(String(decoding: request.body, as: UTF8.self))")
    }
  }

  /// Sends `bytes` to `server` (then, unless `halfClose` is false, no more) and returns what it
  /// answered, read until it closes (within 10 s), on a thread of its own: blocking the tests'
  /// cooperative threads would starve the server's handler.
  static func exchange(_ server: HTTPServer, _ bytes: Data, halfClose: Bool = true) async -> String {
    let port = server.port
    return await withCheckedContinuation { continuation in
      Thread.detachNewThread { continuation.resume(returning: blockingExchange(port, bytes, halfClose: halfClose)) }
    }
  }

  private static func blockingExchange(_ port: Int, _ bytes: Data, halfClose: Bool) -> String {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port)).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else { return "connect failed" }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    _ = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    if halfClose { shutdown(socket, Int32(SHUT_WR)) }
    var answer = Data()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { break }
      answer.append(contentsOf: chunk[..<count])
    }
    return String(decoding: answer, as: UTF8.self)
  }

  @Test func aWholeRequestIsAnswered() async throws {
    let server = try Self.echo()
    defer { server.stop() }
    let answer = await Self.exchange(
      server, Data("POST /camera/whep?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello".utf8))
    #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
    #expect(answer.contains("Content-Length: 24\r\nConnection: close\r\n\r\nPOST /camera/whep hello\n"), "\(answer)")
  }

  @Test(arguments: [
    ("GARBAGE\r\n\r\n", "HTTP/1.1 400 "),
    ("GET nothing HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "),
    ("GET / HTTP/1.1\r\nno colon\r\n\r\n", "HTTP/1.1 400 "),
    ("POST / HTTP/1.1\r\nContent-Length: -4\r\n\r\n", "HTTP/1.1 400 "),
    ("POST / HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n", "HTTP/1.1 413 "),
    ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 411 "),
    ("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000) + "\r\n\r\n", "HTTP/1.1 431 "),
    ("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nshort", "HTTP/1.1 408 "),
    ("GET / HTTP/1.1\r\n", "HTTP/1.1 408 "),
  ]) func aBadRequestGetsItsStatusAndTheServerGoesOn(_ request: String, _ status: String) async throws {
    let server = try Self.echo(deadline: .milliseconds(300))
    defer { server.stop() }
    let answer = await Self.exchange(server, Data(request.utf8))
    #expect(answer.hasPrefix(status), "\(answer.prefix(200))")
    // One line of reason.
    #expect(answer.components(separatedBy: "\r\n\r\n").last?.split(separator: "\n").count == 1)
    #expect(await Self.exchange(server, Data("GET /x HTTP/1.1\r\n\r\n".utf8)).hasPrefix("HTTP/1.1 200 "))
  }

  @Test func aClientThatSendsNothingIsClosedAtTheDeadline() async throws {
    let server = try Self.echo(deadline: .milliseconds(300))
    defer { server.stop() }
    // The client waits 10 s for an answer: a 408 is the server's deadline (0.3 s), not its own.
    let answer = await Self.exchange(server, Data(), halfClose: false)
    #expect(answer.hasPrefix("HTTP/1.1 408 "))
  }

  @Test func aPortInUseIsAClearError() throws {
    let server = try Self.echo()
    defer { server.stop() }
    #expect(throws: RevueError.self) { try HTTPServer(address: "127.0.0.1", port: server.port) { _ in .text(200, "") } }
    #expect(throws: RevueError.self) { try HTTPServer(address: "camera", port: 0) { _ in .text(200, "") } }
  }
}

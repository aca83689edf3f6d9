import Foundation
import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  /// GIO's blocking connection (issue 29): what it reads, the end of the stream, a refused
  /// connection, and a cancel from another thread that ends a call which would otherwise wait
  /// for its 30 s timeout.
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct SocketConnectionTests {
    /// A socket listening on a free port of 127.0.0.1 (connections complete in its backlog
    /// before any accept), and the port.
    static func listener() throws -> (Int32, Int) {
      let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
          bind(socket, pointer, length) == 0 && listen(socket, 4) == 0
            && getsockname(socket, pointer, &length) == 0
        }
      }
      try #require(bound, "cannot listen on 127.0.0.1")
      return (socket, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Runs `body` on a thread of its own (it blocks) and returns what it returns.
    static func onThread(_ body: @escaping @Sendable () -> String) async -> String {
      await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
      }
    }

    @Test func whatTheServerSendsIsReadThenTheEnd() async throws {
      let (listening, port) = try Self.listener()
      defer { close(listening) }
      let said = await Self.onThread {
        do {
          let connection = try SocketConnection(
            host: "127.0.0.1", port: port, security: .plain, timeout: .seconds(5), cancellable: Cancellable())
          let server = accept(listening, nil, nil)
          _ = "hello".withCString { send(server, $0, 5, Int32(MSG_NOSIGNAL)) }
          try connection.write(Array("ping".utf8))
          var got = [UInt8](repeating: 0, count: 4)
          _ = recv(server, &got, 4, Int32(MSG_WAITALL))
          close(server)
          var read: [UInt8] = []
          while true {
            let bytes = try connection.read(upTo: 2)
            if bytes.isEmpty { break }
            read += bytes
          }
          return "\(String(decoding: got, as: UTF8.self)) \(String(decoding: read, as: UTF8.self))"
        } catch {
          return "\(error)"
        }
      }
      #expect(said == "ping hello")
    }

    @Test func aRefusedConnectionIsSaid() async throws {
      let (listening, port) = try Self.listener()
      close(listening)
      let said = await Self.onThread {
        do {
          _ = try SocketConnection(
            host: "127.0.0.1", port: port, security: .plain, timeout: .seconds(5), cancellable: Cancellable())
          return "connected"
        } catch {
          return "\(error)"
        }
      }
      #expect(said.contains("refused"), "\(said)")
    }

    @Test func aCancelFromAnotherThreadEndsABlockedRead() async throws {
      let (listening, port) = try Self.listener()
      defer { close(listening) }
      let cancellable = Cancellable()
      let started = ContinuousClock.now
      async let said = Self.onThread {
        do {
          let connection = try SocketConnection(
            host: "127.0.0.1", port: port, security: .plain, timeout: .seconds(30), cancellable: cancellable)
          return "read \(try connection.read(upTo: 16).count) bytes"
        } catch {
          return "\(error)"
        }
      }
      // Once the connection is made (the server has it to accept), the reader blocks: nothing comes.
      let server = await Self.onThread { "\(accept(listening, nil, nil))" }
      cancellable.cancel()
      #expect(await said == "cancelled")
      #expect(ContinuousClock.now - started < .seconds(5))
      close(Int32(server) ?? -1)
    }
  }
}

import Foundation
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// Issue 29: WHIP's and WHEP's own HTTP/1.1 client (no URLSession) against real servers on
/// loopback: the SDK's HTTP server, Tests/Peers/hostile_http.py, and aiortc's endpoint
/// (aiohttp) over TLS with a certificate of a private authority.
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct HTTPClientTests {
  /// What a server was sent: each request's method, path, `Authorization` and body.
  final class Requests: Sendable {
    private let seen = Mutex<[String]>([])
    func add(_ request: HTTPServer.Request) {
      let said = "\(request.method) \(request.path) \(request.headers["authorization"] ?? "-")"
      seen.withLock { $0.append(said + " " + String(decoding: request.body, as: UTF8.self)) }
    }
    var all: [String] { seen.withLock { $0 } }
  }

  /// A server on 127.0.0.1 that records each request and answers it with `respond`.
  static func server(
    _ requests: Requests, _ respond: @escaping @Sendable (HTTPServer.Request) -> HTTPServer.Response
  ) throws -> HTTPServer {
    try HTTPServer(address: "127.0.0.1", port: 0) { request in
      requests.add(request)
      return respond(request)
    }
  }

  @Test func anOfferIsPostedAndItsAnswerLocationAndLinksRead() async throws {
    let requests = Requests()
    let server = try Self.server(requests) { _ in
      HTTPServer.Response(
        status: 201,
        headers: [
          ("Content-Type", "application/sdp"), ("Location", "/resource/1"),
          ("Link", "<stun:stun.example.org>; rel=\"ice-server\""),
          ("link", "</resource/1/layer>; rel=\"urn:ietf:params:whep:ext:core:layer\""),
        ], body: Data("v=0\r\nanswer\r\n".utf8))
    }
    defer { server.stop() }
    let endpoint = URL(string: "http://127.0.0.1:\(server.port)/whip/camera?room=1")!
    let (answer, resource, links) = try await WHIPExchange.post(
      offer: "v=0\r\noffer\r\n", to: endpoint, token: "s3cret", timeout: .seconds(5))
    #expect(answer == "v=0\r\nanswer\r\n")
    #expect(resource.absoluteString == "http://127.0.0.1:\(server.port)/resource/1")
    #expect(links["ice-server"]?.absoluteString == "stun:stun.example.org", "\(links)")
    #expect(
      links["urn:ietf:params:whep:ext:core:layer"]?.absoluteString
        == "http://127.0.0.1:\(server.port)/resource/1/layer", "\(links)")
    #expect(requests.all == ["POST /whip/camera Bearer s3cret v=0\r\noffer\r\n"], "\(requests.all)")
  }

  /// A 303 after a POST goes on as a GET without the body; to another origin (`localhost` is
  /// not `127.0.0.1`) without the token.
  @Test func aRedirectToAnotherOriginGoesOnWithoutTheToken() async throws {
    let requests = Requests()
    let target = try Self.server(requests) { _ in .text(200, "done") }
    defer { target.stop() }
    let port = target.port
    let first = try Self.server(requests) { _ in
      HTTPServer.Response(status: 303, headers: [("Location", "http://localhost:\(port)/next")])
    }
    defer { first.stop() }
    let request = HTTPClient.Request(
      method: "POST", url: URL(string: "http://127.0.0.1:\(first.port)/whip")!, body: Data("offer".utf8),
      contentType: "application/sdp", token: "s3cret")
    let response = try await HTTPClient.send(request, maxBody: 1024, within: .seconds(5))
    #expect(response.status == 200 && String(decoding: response.body, as: UTF8.self) == "done\n")
    #expect(requests.all == ["POST /whip Bearer s3cret offer", "GET /next - "], "\(requests.all)")
  }

  @Test func aRedirectLoopEnds() async throws {
    let requests = Requests()
    let server = try Self.server(requests) { _ in HTTPServer.Response(status: 307, headers: [("Location", "/again")]) }
    defer { server.stop() }
    let request = HTTPClient.Request(method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/")!)
    await #expect {
      try await HTTPClient.send(request, maxBody: 1024, within: .seconds(5))
    } throws: { "\($0)" == "more than \(HTTPClient.maxRedirects) redirects" }
    #expect(requests.all.count == HTTPClient.maxRedirects + 1)
  }

  /// A chunked answer (with a chunk extension and a trailer field) is read whole, its two `Link`
  /// fields both.
  @Test func aChunkedAnswerIsReadWhole() async throws {
    let (server, url) = try await WHIPEndpoint.hostile("chunked")
    let endpoint = try WHIPExchange.httpURL(url, scheme: "whip") { "not a WHIP URL" }
    let (answer, resource, links) = try await WHIPExchange.post(
      offer: "v=0\r\n", to: endpoint, token: nil, timeout: .seconds(5))
    #expect(answer == "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n")
    #expect(resource.path == "/resource/chunked")
    #expect(Set(links.keys) == ["ice-server", "urn:ietf:params:whep:ext:core:layer"], "\(links)")
    await server.stop()
  }

  /// A chunk that announces 2^63-1 bytes is refused as over the limit (its size added to what
  /// came would overflow), in one line.
  @Test func aChunkOfAHugeSizeIsRefused() async throws {
    let (server, url) = try await WHIPEndpoint.hostile("bigchunk")
    let endpoint = try WHIPExchange.httpURL(url, scheme: "whip") { "not a WHIP URL" }
    await #expect {
      try await WHIPExchange.post(offer: "v=0\r\n", to: endpoint, token: nil, timeout: .seconds(5))
    } throws: { "\($0)".contains("the reply is over 256 KiB") }
    await server.stop()
  }

  /// Over https, a certificate of an authority the client was not told of is refused in one line
  /// naming the host and how to trust it; told of it, the exchange goes through (aiortc's
  /// endpoint refuses an offer that is not SDP: a whole exchange without a WebRTC session).
  @Test func anHTTPSServerIsTrustedOnlyWhenItsAuthorityIsGiven() async throws {
    let certificate = try await TestCertificate.make()
    defer { certificate.remove() }
    let (endpoint, url) = try await WHIPEndpoint.start(certificate: certificate)
    let target = try WHIPExchange.httpURL(url, scheme: "whip") { "not a WHIP URL" }
    #expect(target.scheme == "https")
    let request = HTTPClient.Request(
      method: "POST", url: target, body: Data("hello".utf8), contentType: "text/plain", token: "s3cret")
    await #expect {
      try await HTTPClient.send(request, maxBody: 1024, within: .seconds(5), trustedCertificates: nil)
    } throws: { error in
      let said = "\(error)"
      return said.contains("the TLS certificate of 127.0.0.1 is not trusted (signed by an unknown certificate")
        && said.contains("REVUE_TLS_CA_FILE") && !said.contains("\n")
    }
    await #expect {
      try await HTTPClient.send(
        request, maxBody: 1024, within: .seconds(5), trustedCertificates: "/nonexistent/authority.pem")
    } throws: { "\($0)".contains("cannot read the certificates in /nonexistent/authority.pem") }
    let response = try await HTTPClient.send(
      request, maxBody: 1024, within: .seconds(5), trustedCertificates: certificate.certificate.path)
    #expect(response.status == 415, "\(response.status) \(response.reason)")
    #expect(String(decoding: response.body, as: UTF8.self) == "the offer must be application/sdp")
    await endpoint.stop()
  }
}

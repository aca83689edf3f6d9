import Foundation
import GStreamer
import Synchronization

/// A small HTTP/1.1 client for WHIP and WHEP (issue 29: no URLSession, whose libcurl and TLS
/// libraries every process mapped at start): one request per connection (`Connection: close`)
/// over GIO's sockets (``SocketConnection``, TLS for `https`), the reply's body read by
/// `Content-Length`, chunked or to the end, within a size limit; redirects followed, the token
/// dropped on one to another origin. The blocking I/O runs on a thread of its own, never on
/// Swift's cooperative pool, and the whole exchange within a deadline that cancels it: nothing
/// goes on after.
///
/// An `https` server's certificate is checked against the system's certificate authorities, or
/// against those in the PEM file named by ``trustedCertificatesVariable`` instead.
enum HTTPClient {
  /// A request: its method, URL, body and its type, and the bearer token.
  struct Request: Sendable {
    var method: String
    var url: URL
    var body: Data?
    var contentType: String?
    /// Sent as `Authorization: Bearer …`, on the request's origin only.
    var token: String?
  }

  /// A reply: its status, reason phrase, header fields as sent and body.
  struct Response: Sendable {
    var status: Int
    var reason: String
    var fields: [(name: String, value: String)]
    var body: Data

    /// The value of the field `name` (any case); several fields of that name joined with `, `
    /// (RFC 9110, 5.3), as `Link` fields are read.
    func value(_ name: String) -> String? {
      let values = fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
      return values.isEmpty ? nil : values.joined(separator: ", ")
    }
  }

  /// Why an exchange failed, in one line.
  struct Failure: Error, Sendable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
  }

  /// The environment variable naming a PEM file of the certificate authorities trusted for
  /// `https`, instead of the system's (a private authority's, for a test bed's endpoint).
  static let trustedCertificatesVariable = "REVUE_TLS_CA_FILE"
  /// The most bytes of a reply's status line and header fields.
  static let maxHeaderBytes = 64 * 1024
  /// The most redirects followed.
  static let maxRedirects = 5

  /// The PEM file that ``trustedCertificatesVariable`` names, nil when it is not set.
  static var trustedCertificatesFromEnvironment: String? {
    ProcessInfo.processInfo.environment[trustedCertificatesVariable].flatMap { $0.isEmpty ? nil : $0 }
  }

  /// Sends `request` and returns the reply, its body whole and at most `maxBody` bytes, within
  /// `deadline` in all (connecting, redirects and reading included).
  /// - Parameter trusted: the PEM file of the certificate authorities trusted for `https`, nil
  ///   for the system's.
  /// - Throws: ``Failure``: no reply, no complete reply within `deadline`, a body over `maxBody`,
  ///   an untrusted certificate, too many redirects.
  static func send(
    _ request: Request, maxBody: Int, within deadline: Duration,
    trustedCertificates trusted: String? = trustedCertificatesFromEnvironment
  ) async throws(Failure) -> Response {
    let cancellable = Cancellable()
    let outcome = Outcome()
    let timer = Task {
      try await Task.sleep(for: deadline)
      outcome.settle(.failure(Failure("no complete reply within \(deadline)")))
      cancellable.cancel()
    }
    let result = await outcome.wait {
      let thread = Thread {
        let exchange = Exchange(
          cancellable: cancellable, maxBody: maxBody, timeout: deadline, trustedCertificates: trusted)
        outcome.settle(Result { () throws(Failure) in try exchange.run(request) })
      }
      thread.name = "revue-http"
      thread.start()
    }
    timer.cancel()
    // Ends the thread's blocked call, if the deadline came first.
    cancellable.cancel()
    return try result.get()
  }

  // MARK: - The outcome

  /// The first of the reply, a failure, or the deadline, handed to the waiting task once.
  private final class Outcome: Sendable {
    private struct State {
      var result: Result<Response, Failure>?
      var waiter: CheckedContinuation<Result<Response, Failure>, Never>?
    }

    private let state = Mutex(State())

    /// Runs `start` and waits for the outcome.
    func wait(_ start: () -> Void) async -> Result<Response, Failure> {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state in
          if state.result == nil { state.waiter = continuation }
          return state.result
        }
        if let ready { continuation.resume(returning: ready) } else { start() }
      }
    }

    /// Settles the outcome, once; later ones are dropped.
    func settle(_ result: Result<Response, Failure>) {
      let waiter = state.withLock { state -> CheckedContinuation<Result<Response, Failure>, Never>? in
        guard state.result == nil else { return nil }
        state.result = result
        defer { state.waiter = nil }
        return state.waiter
      }
      waiter?.resume(returning: result)
    }
  }

  // MARK: - The blocking exchange

  /// One exchange, run on its own thread: the request, and those its redirects ask for.
  private struct Exchange {
    let cancellable: Cancellable
    let maxBody: Int
    let timeout: Duration
    let trustedCertificates: String?

    /// Sends `request`, following redirects.
    func run(_ request: Request) throws(Failure) -> Response {
      var request = request
      for _ in 0...HTTPClient.maxRedirects {
        let response = try once(request)
        guard [301, 302, 303, 307, 308].contains(response.status), let location = response.value("Location"),
          let next = URL(string: location, relativeTo: request.url)?.absoluteURL,
          next.scheme == "http" || next.scheme == "https"
        else { return response }
        // A redirect to another origin goes without the token, as fetch drops `Authorization`
        // there (and as the session's DELETE goes).
        if WHIPExchange.origin(of: next) != WHIPExchange.origin(of: request.url) { request.token = nil }
        // 303, and 301 and 302 after a POST, go on as a GET without a body (RFC 9110, 15.4).
        if response.status == 303 || (response.status != 307 && response.status != 308 && request.method == "POST") {
          request.method = "GET"
          request.body = nil
          request.contentType = nil
        }
        request.url = next
      }
      throw Failure("more than \(HTTPClient.maxRedirects) redirects")
    }

    /// Sends `request` on a connection of its own and reads the reply.
    private func once(_ request: Request) throws(Failure) -> Response {
      let url = request.url
      guard let host = url.host(percentEncoded: false), !host.isEmpty else { throw Failure("no host in the URL") }
      let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
      let secure = url.scheme == "https"
      do throws(ReadFailure) {
        let connection: SocketConnection
        do {
          connection = try SocketConnection(
            host: bare, port: url.port ?? (secure ? 443 : 80),
            security: secure ? .tls(trustedCertificates: trustedCertificates) : .plain, timeout: timeout,
            cancellable: cancellable)
        } catch { throw .socket(error) }
        defer { connection.close() }
        do {
          try connection.write(Array(head(of: request, host: bare).utf8) + (request.body ?? Data()))
        } catch { throw .socket(error) }
        var reader = Reader(connection: connection, maxBody: maxBody)
        return try reader.response(to: request.method)
      } catch {
        switch error {
        case .socket(.untrustedCertificate(let host, let reasons)):
          throw Failure(
            "the TLS certificate of \(host) is not trusted (\(reasons)); a private authority's certificate"
              + " can be given in \(HTTPClient.trustedCertificatesVariable)")
        case .socket(let error): throw Failure("\(error)")
        case .reply(let text): throw Failure(text)
        }
      }
    }

    /// The request line and header fields, and the empty line.
    private func head(of request: Request, host: String) -> String {
      let url = request.url
      let path = url.path(percentEncoded: true)
      var target = path.isEmpty ? "/" : path
      if let query = url.query(percentEncoded: true) { target += "?" + query }
      let hostField = (host.contains(":") ? "[\(host)]" : host) + (url.port.map { ":\($0)" } ?? "")
      var lines = ["\(request.method) \(target) HTTP/1.1", "Host: \(hostField)"]
      if let token = request.token { lines.append("Authorization: Bearer \(token)") }
      if let contentType = request.contentType { lines.append("Content-Type: \(contentType)") }
      if let body = request.body {
        lines.append("Content-Length: \(body.count)")
      } else if ["POST", "PUT", "PATCH"].contains(request.method) {
        lines.append("Content-Length: 0")
      }
      lines += ["Accept: */*", "User-Agent: revue", "Connection: close"]
      return lines.joined(separator: "\r\n") + "\r\n\r\n"
    }
  }

  /// A read's failure: the socket's, or a reply that is not one this client takes.
  private enum ReadFailure: Error {
    case socket(SocketConnectionError)
    case reply(String)
  }

  // MARK: - Reading the reply

  /// Reads a reply from a connection: its head, then its body as the head says.
  private struct Reader {
    let connection: SocketConnection
    let maxBody: Int
    private var buffer: [UInt8] = []

    init(connection: SocketConnection, maxBody: Int) {
      self.connection = connection
      self.maxBody = maxBody
    }

    private var tooBig: ReadFailure { .reply("the reply is over \(maxBody / 1024) KiB (an SDP answer is a few KiB)") }

    /// Reads more into the buffer; false at the end of the stream.
    private mutating func fill() throws(ReadFailure) -> Bool {
      let bytes: [UInt8]
      do { bytes = try connection.read(upTo: 64 * 1024) } catch { throw .socket(error) }
      buffer += bytes
      return !bytes.isEmpty
    }

    /// The reply to a request of `method`: the final one, after any interim (1xx) replies.
    mutating func response(to method: String) throws(ReadFailure) -> Response {
      while true {
        let (status, reason, fields) = try head()
        if (100..<200).contains(status) { continue }
        var response = Response(status: status, reason: reason, fields: fields, body: Data())
        response.body = try body(of: response, to: method)
        return response
      }
    }

    /// The status line and header fields, up to the empty line.
    private mutating func head() throws(ReadFailure) -> (Int, String, [(name: String, value: String)]) {
      let end: Int
      while true {
        if let found = Self.find([13, 10, 13, 10], in: buffer) {
          end = found
          break
        }
        guard buffer.count <= HTTPClient.maxHeaderBytes else {
          throw .reply("the reply's header is over \(HTTPClient.maxHeaderBytes / 1024) KiB")
        }
        guard try fill() else {
          throw .reply(buffer.isEmpty ? "no HTTP reply (the connection closed)" : "the connection closed mid-reply")
        }
      }
      let text = String(decoding: buffer[..<end], as: UTF8.self)
      buffer.removeFirst(end + 4)
      let lines = text.components(separatedBy: "\r\n")
      let parts = lines[0].split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
      guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
        throw .reply("not an HTTP reply: \(lines[0].prefix(80))")
      }
      let reason =
        parts.count > 2 ? String(parts[2].filter { !($0.asciiValue.map { $0 < 32 || $0 == 127 } ?? false) }) : ""
      var fields: [(name: String, value: String)] = []
      for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        fields.append(
          (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
      }
      return (status, String(reason.prefix(80)), fields)
    }

    /// The body of `response`: none for a HEAD or a 204 or 304, chunked, by `Content-Length`, or
    /// to the end.
    private mutating func body(of response: Response, to method: String) throws(ReadFailure) -> Data {
      if method == "HEAD" || response.status == 204 || response.status == 304 { return Data() }
      if let coding = response.value("Transfer-Encoding"), coding.lowercased().contains("chunked") {
        return try chunked()
      }
      if let length = response.value("Content-Length") {
        guard let count = Int(length.split(separator: ",")[0].trimmingCharacters(in: .whitespaces)), count >= 0
        else { throw .reply("the reply's Content-Length is not a length: \(length.prefix(40))") }
        guard count <= maxBody else { throw tooBig }
        while buffer.count < count {
          guard try fill() else { throw .reply("the connection closed mid-reply") }
        }
        return Data(buffer.prefix(count))
      }
      while try fill() {
        guard buffer.count <= maxBody else { throw tooBig }
      }
      guard buffer.count <= maxBody else { throw tooBig }
      return Data(buffer)
    }

    /// A chunked body (RFC 9112, 7.1): each chunk's size in hex, the chunk, until a chunk of 0;
    /// extensions and trailer fields are skipped.
    private mutating func chunked() throws(ReadFailure) -> Data {
      var body: [UInt8] = []
      while true {
        let line = try self.line()
        let size = line.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) }
        guard let size, let count = Int(size, radix: 16), count >= 0 else {
          throw .reply("a chunk's size is not one: \(line.prefix(40))")
        }
        if count == 0 {
          while try !self.line().isEmpty {}
          return Data(body)
        }
        // (Not `body.count + count`: a size of 7fffffffffffffff would overflow it.)
        guard count <= maxBody - body.count else { throw tooBig }
        while buffer.count < count + 2 {
          guard try fill() else { throw .reply("the connection closed mid-reply") }
        }
        body += buffer.prefix(count)
        buffer.removeFirst(count + 2)
      }
    }

    /// The next line (without its CRLF).
    private mutating func line() throws(ReadFailure) -> String {
      while true {
        if let end = Self.find([13, 10], in: buffer) {
          let line = String(decoding: buffer[..<end], as: UTF8.self)
          buffer.removeFirst(end + 2)
          return line
        }
        guard buffer.count <= HTTPClient.maxHeaderBytes else { throw .reply("a chunk's line is too long") }
        guard try fill() else { throw .reply("the connection closed mid-reply") }
      }
    }

    /// Where `pattern` first starts in `bytes`.
    private static func find(_ pattern: [UInt8], in bytes: [UInt8]) -> Int? {
      guard bytes.count >= pattern.count else { return nil }
      return (0...(bytes.count - pattern.count)).first { start in
        pattern.indices.allSatisfy { bytes[start + $0] == pattern[$0] }
      }
    }
  }
}

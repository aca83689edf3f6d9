import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A small HTTP/1.1 server for the node's WebRTC viewers (WHEP and the page to watch on): one
/// request per connection (`Connection: close`), each read within a deadline and within size
/// limits, answered by an async handler. Nothing a client sends can hold it up or grow it: a
/// request that is malformed, too large or too slow gets its status (400, 413, 408, 431) and
/// the connection closes; connections beyond ``maxConnections`` are closed at once.
final class HTTPServer: Sendable {
  /// A request as read.
  struct Request: Sendable {
    /// `GET`, `POST`, … as sent (upper case).
    var method: String
    /// The path, without its query; percent-encoding left as sent.
    var path: String
    /// The header fields, their names in lower case (the first of a repeated one).
    var headers: [String: String]
    /// The body (`Content-Length` bytes; chunked bodies are refused).
    var body: Data
  }

  /// A response: its status, header fields and body (`Content-Length` and `Connection: close`
  /// are added).
  struct Response: Sendable {
    var status: Int
    var headers: [(String, String)] = []
    var body = Data()

    /// A response of `status` with `text` (and a line end) as a plain-text body.
    static func text(_ status: Int, _ text: String, headers: [(String, String)] = []) -> Response {
      Response(
        status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers,
        body: Data((text + "\n").utf8))
    }
  }

  /// The most bytes of a request's line and header fields.
  static let maxHeaderBytes = 16 * 1024
  /// The most bytes of a request's body (an SDP offer is 2–20 KB).
  static let maxBodyBytes = 256 * 1024
  /// How long a client may take to send its whole request, by default.
  static let readDeadline = Duration.seconds(5)
  /// Connections served at once at most.
  static let maxConnections = 64

  /// The port the server listens on.
  let port: Int
  private let descriptor: Int32
  private let open = Atomic(0)
  private let deadline: Duration
  private let stopped = Atomic(false)

  /// Listens on `address` (an IPv4 or IPv6 address; `0.0.0.0` for every one) and `port` (0 for
  /// any free one) and answers each request with `handler`; a client gets `deadline` to send
  /// its request.
  /// - Throws: ``RevueError`` (`.invalidInput`) for an address that is not one, or one the
  ///   server cannot listen on (in use, not this host's).
  init(
    address: String, port: Int, deadline: Duration = readDeadline,
    handler: @escaping @Sendable (Request) async -> Response
  ) throws(RevueError) {
    self.deadline = deadline
    var storage = sockaddr_storage()
    let length: socklen_t
    var v4 = in_addr()
    var v6 = in6_addr()
    if inet_pton(AF_INET, address, &v4) == 1 {
      withUnsafeMutableBytes(of: &storage) { raw in
        let socketAddress = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
        socketAddress.pointee.sin_family = sa_family_t(AF_INET)
        socketAddress.pointee.sin_port = in_port_t(UInt16(clamping: port)).bigEndian
        socketAddress.pointee.sin_addr = v4
      }
      length = socklen_t(MemoryLayout<sockaddr_in>.size)
    } else if inet_pton(AF_INET6, address, &v6) == 1 {
      withUnsafeMutableBytes(of: &storage) { raw in
        let socketAddress = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
        socketAddress.pointee.sin6_family = sa_family_t(AF_INET6)
        socketAddress.pointee.sin6_port = in_port_t(UInt16(clamping: port)).bigEndian
        socketAddress.pointee.sin6_addr = v6
      }
      length = socklen_t(MemoryLayout<sockaddr_in6>.size)
    } else {
      throw RevueError(.invalidInput, "'\(address)' is not an IP address to listen on")
    }
    let descriptor = socket(Int32(storage.ss_family), Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw RevueError(.invalidInput, "cannot open a socket: \(Self.lastError)") }
    var yes: Int32 = 1
    setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    let bound = withUnsafePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
    }
    guard bound == 0, listen(descriptor, 64) == 0 else {
      let reason = Self.lastError
      close(descriptor)
      throw RevueError(.invalidInput, "cannot listen on \(address) port \(port): \(reason)")
    }
    var local = sockaddr_storage()
    var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &local) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &localLength) }
    }
    self.port = withUnsafeBytes(of: &local) { raw in
      let family = raw.load(as: sa_family_t.self)
      let networkPort =
        family == sa_family_t(AF_INET6)
        ? raw.load(as: sockaddr_in6.self).sin6_port : raw.load(as: sockaddr_in.self).sin_port
      return Int(UInt16(bigEndian: networkPort))
    }
    self.descriptor = descriptor
    let thread = Thread { [self] in acceptLoop(handler) }
    thread.name = "revue-http"
    thread.start()
  }

  deinit { stop() }

  /// Stops listening; requests being answered finish.
  func stop() {
    guard !stopped.exchange(true, ordering: .relaxed) else { return }
    // Wakes the accepting thread, which closes the socket.
    shutdown(descriptor, Int32(SHUT_RDWR))
  }

  /// Where connections are read and written.
  private static let io = DispatchQueue(label: "revue.http", attributes: .concurrent)

  private static var lastError: String { String(cString: strerror(errno)) }

  private func acceptLoop(_ handler: @escaping @Sendable (Request) async -> Response) {
    while !stopped.load(ordering: .relaxed) {
      let client = accept(descriptor, nil, nil)
      if client < 0 {
        if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE { continue }
        break
      }
      guard open.add(1, ordering: .relaxed).newValue <= Self.maxConnections else {
        open.subtract(1, ordering: .relaxed)
        close(client)
        continue
      }
      // Reading and writing block (within their deadlines) on a Dispatch thread, never on the
      // cooperative pool, which a few slow clients would stall; the handler runs as a task.
      Self.io.async { [self] in
        let answered = { (response: Response) in
          Self.io.async { [self] in
            Self.write(response, to: client)
            close(client)
            open.subtract(1, ordering: .relaxed)
          }
        }
        switch Self.read(client, within: deadline) {
        case .success(let request): Task { answered(await handler(request)) }
        case .failure(let refusal): answered(refusal.response)
        }
      }
    }
    close(descriptor)
  }

  /// Why a request was not read.
  struct Refusal: Error {
    var response: Response
    init(_ status: Int, _ reason: String) { response = .text(status, reason) }
  }

  /// Reads one request from `client` within `seconds` and the size limits.
  static func read(_ client: Int32, within seconds: Duration) -> Result<Request, Refusal> {
    let deadline = ContinuousClock.now + seconds
    var received = Data()
    var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    func more() -> Bool {
      let left = deadline - .now
      guard left > .zero else { return false }
      var timeout = timeval(
        tv_sec: Int(left.components.seconds), tv_usec: Int(left.components.attoseconds / 1_000_000_000_000))
      if timeout.tv_sec == 0 && timeout.tv_usec == 0 { timeout.tv_usec = 1000 }
      setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
      let count = chunk.withUnsafeMutableBytes { Glibc.recv(client, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { return false }
      received.append(contentsOf: chunk[..<count])
      return true
    }
    let separator = Data("\r\n\r\n".utf8)
    var headerEnd: Range<Data.Index>?
    while true {
      headerEnd = received.range(of: separator)
      if headerEnd != nil { break }
      if received.count > maxHeaderBytes { return .failure(Refusal(431, "the request's header is over 16 KiB")) }
      guard more() else {
        return .failure(Refusal(408, "the request did not come whole in time"))
      }
    }
    guard let headerEnd, headerEnd.lowerBound <= maxHeaderBytes,
      let head = String(data: received[..<headerEnd.lowerBound], encoding: .utf8)
    else { return .failure(Refusal(431, "the request's header is over 16 KiB or not text")) }
    let lines = head.components(separatedBy: "\r\n")
    let requestLine = lines[0].split(separator: " ", omittingEmptySubsequences: false)
    guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1."), !requestLine[0].isEmpty,
      requestLine[1].hasPrefix("/")
    else { return .failure(Refusal(400, "malformed request line: METHOD /PATH HTTP/1.1")) }
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
        return .failure(Refusal(400, "malformed header field: NAME: VALUE"))
      }
      let name = line[..<colon].lowercased()
      if headers[name] == nil { headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces) }
    }
    if headers["transfer-encoding"] != nil {
      return .failure(Refusal(411, "a chunked body is not taken: send Content-Length"))
    }
    let length = headers["content-length"].map { Int($0) } ?? 0
    guard let length, length >= 0 else { return .failure(Refusal(400, "malformed Content-Length")) }
    guard length <= maxBodyBytes else { return .failure(Refusal(413, "the body is over 256 KiB")) }
    let bodyStart = headerEnd.upperBound
    while received.count - bodyStart < length {
      guard more() else { return .failure(Refusal(408, "the body did not come whole in time")) }
    }
    let target = requestLine[1]
    let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
    return .success(
      Request(
        method: String(requestLine[0]), path: String(path), headers: headers,
        body: Data(received[bodyStart..<(bodyStart + length)])))
  }

  /// Writes `response` to `client`, giving up on a client that takes nothing for 5 s.
  static func write(_ response: Response, to client: Int32) {
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var head = "HTTP/1.1 \(response.status) \(reason(response.status))\r\n"
    for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
    head += "Content-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
    let bytes = Data(head.utf8) + response.body
    var written = 0
    while written < bytes.count {
      let count = bytes[written...].withUnsafeBytes {
        Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      guard count > 0 else { return }
      written += count
    }
  }

  /// The reason phrase of `status`.
  static func reason(_ status: Int) -> String {
    switch status {
    case 200: "OK"
    case 201: "Created"
    case 204: "No Content"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 408: "Request Timeout"
    case 411: "Length Required"
    case 413: "Content Too Large"
    case 415: "Unsupported Media Type"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 503: "Service Unavailable"
    default: "Status"
    }
  }
}

import Foundation
import Synchronization

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The HTTP side of WHIP (RFC 9725), and of WHEP, whose exchange is the same with the offer
/// coming from the viewer.
enum WHIPExchange {
  /// `http(s)://…` for `SCHEME+http(s)://…` (`whip+https://…`, `whep+http://…`) and for
  /// `http(s)://…` itself, with a host.
  /// - Throws: ``RevueError`` (`.invalidInput`) with `refusal` for any other URL.
  static func httpURL(_ url: URL, scheme prefix: String, refusal: () -> String) throws(RevueError) -> URL {
    guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false), let given = url.scheme,
      url.host?.isEmpty == false
    else { throw RevueError(.invalidInput, refusal()) }
    let scheme = given.hasPrefix(prefix + "+") ? String(given.dropFirst(prefix.count + 1)) : given
    guard scheme == "https" || scheme == "http" else { throw RevueError(.invalidInput, refusal()) }
    components.scheme = scheme
    return components.url!
  }

  /// POSTs `offer` to `endpoint`; returns the answer, the session's URL and the links of the
  /// answer's `Link` header fields (``links(in:relativeTo:)``).
  /// - Parameter server: what messages call the server: `WHIP endpoint` or `WHEP server`.
  /// - Throws: ``RevueError`` (`.network`) for no answer within `timeout`, a status other than
  ///   201 (quoting the first 200 characters of the body, on one line), a body that is not an
  ///   SDP, or no `Location`.
  static func post(
    offer: String, to endpoint: URL, token: String?, timeout: Duration, server: String = "WHIP endpoint"
  ) async throws(RevueError) -> (answer: String, resource: URL, links: [String: URL]) {
    var request = URLRequest(url: endpoint, timeoutInterval: Double(timeout.components.seconds) + 1)
    request.httpMethod = "POST"
    request.setValue("application/sdp", forHTTPHeaderField: "Content-Type")
    if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    request.httpBody = Data(offer.utf8)
    let shown = WHIPPublication.redacted(endpoint)
    let (body, response) = try await send(request, "POST the offer to \(shown)", within: timeout)
    let text = String(decoding: body, as: UTF8.self)
    // What the endpoint said, on one line, without the token should it echo it.
    var quoted = text.prefix(200).split(whereSeparator: \.isNewline).joined(separator: " ")
    if let token, !token.isEmpty { quoted = quoted.replacingOccurrences(of: token, with: "…") }
    guard response.statusCode == 201 else {
      throw RevueError(
        .network,
        "the \(server) \(shown) answered \(response.statusCode)"
          + " \(HTTPURLResponse.localizedString(forStatusCode: response.statusCode)): \(quoted)")
    }
    guard text.hasPrefix("v=0") else {
      throw RevueError(.network, "the \(server) \(shown) answered 201 without an SDP answer: \(quoted)")
    }
    guard let location = response.value(forHTTPHeaderField: "Location"),
      let resource = URL(string: location, relativeTo: endpoint)?.absoluteURL
    else {
      throw RevueError(.network, "the \(server) \(shown) answered 201 without a Location")
    }
    return (text, resource, links(in: response.value(forHTTPHeaderField: "Link") ?? "", relativeTo: endpoint))
  }

  /// The links of a `Link` header's value (RFC 8288; several fields come joined by commas):
  /// each `rel` (each of a `rel` that names several) and its URL, resolved against `base`; the
  /// first of a `rel` given twice. `<https://stun.example.org>; rel="ice-server", </s/1/layer>;
  /// rel="urn:ietf:params:whep:ext:core:layer"`.
  static func links(in value: String, relativeTo base: URL) -> [String: URL] {
    var links: [String: URL] = [:]
    var rest = Substring(value)
    while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
      let target = rest[rest.index(after: open)..<close]
      // The parameters up to the next link: the next comma outside quotes.
      var end = rest.endIndex
      var quoted = false
      for index in rest[close...].indices {
        if rest[index] == "\"" { quoted.toggle() } else if rest[index] == ",", !quoted { end = index; break }
      }
      for parameter in rest[rest.index(after: close)..<end].split(separator: ";") {
        let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard pair.count == 2, pair[0].lowercased() == "rel", let url = URL(string: String(target), relativeTo: base)
        else { continue }
        for rel in pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")).split(separator: " ") {
          links[String(rel)] = links[String(rel)] ?? url.absoluteURL
        }
      }
      rest = end < rest.endIndex ? rest[rest.index(after: end)...] : ""
    }
    return links
  }

  /// Sends `body` (of `contentType`) to `url` with `method`, and the token; returns the status,
  /// the reply's body and its `Location`, resolved against `url`.
  /// - Throws: ``RevueError`` (`.network`) for no complete reply within `timeout`.
  static func request(
    _ method: String, _ url: URL, body: Data? = nil, contentType: String? = nil, token: String?, timeout: Duration
  ) async throws(RevueError) -> (status: Int, body: Data, location: URL?) {
    var request = URLRequest(url: url, timeoutInterval: Double(timeout.components.seconds) + 1)
    request.httpMethod = method
    if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
    if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    request.httpBody = body
    let (reply, response) = try await send(request, "\(method) \(WHIPPublication.redacted(url))", within: timeout)
    let location = response.value(forHTTPHeaderField: "Location").flatMap { URL(string: $0, relativeTo: url) }
    return (response.statusCode, reply, location?.absoluteURL)
  }

  /// Refuses to send `token` over plain `http://` to another machine: only `https://`, or
  /// `http://` to this one (`localhost`, `127.0.0.0/8`, `::1`, as browsers take for secure).
  /// - Throws: ``RevueError`` (`.invalidInput`), before anything is sent.
  /// - Parameter name: `WHIP` or `WHEP`, as messages and schemes say it.
  static func checkToken(_ token: String?, for endpoint: URL, as name: String = "WHIP") throws(RevueError) {
    let scheme = name.lowercased()
    guard token != nil, endpoint.scheme == "http" || endpoint.scheme == "\(scheme)+http" else { return }
    let host = (endpoint.host ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
    guard !isLoopback(host) else { return }
    throw RevueError(
      .invalidInput,
      "the \(name) token is not sent over plain http to \(host): use \(scheme)+https:// (plain http only to this machine)"
    )
  }

  /// Whether `host` names this machine: `localhost`, an address of `127.0.0.0/8`, or `::1`.
  private static func isLoopback(_ host: String) -> Bool {
    var ipv4 = in_addr()
    var ipv6 = in6_addr()
    if host == "localhost" { return true }
    if inet_pton(AF_INET, host, &ipv4) == 1 { return UInt32(bigEndian: ipv4.s_addr) >> 24 == 127 }
    guard inet_pton(AF_INET6, host, &ipv6) == 1 else { return false }
    return withUnsafeBytes(of: ipv6) { Array($0) } == [UInt8](repeating: 0, count: 15) + [1]
  }

  /// A URL's origin (RFC 6454): its scheme, host and port, the scheme's default port if none.
  static func origin(of url: URL) -> String {
    let scheme = (url.scheme ?? "").replacingOccurrences(of: "whip+", with: "").lowercased()
    let port = url.port ?? (scheme == "https" ? 443 : 80)
    return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
  }

  /// DELETEs the session at `resource`; a failure is logged under `category` (the endpoint ends
  /// it on its own when the connection goes).
  static func delete(_ resource: URL, token: String?, category: String = "WHIP") async {
    var request = URLRequest(url: resource, timeoutInterval: 5)
    request.httpMethod = "DELETE"
    if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    let shown = WHIPPublication.redacted(resource)
    do {
      let (_, response) = try await send(request, "DELETE \(shown)", within: .seconds(5))
      if !(200..<300).contains(response.statusCode) {
        RevueLog.log(.warning, category, "DELETE \(shown) answered \(response.statusCode)")
      }
    } catch {
      RevueLog.log(.warning, category, "\(error)")
    }
  }

  /// The most a reply's body may hold: an SDP answer is a few KiB.
  static let maxBody = 256 * 1024

  /// Sends `request` and returns the reply, its body whole, within `deadline` in all (the
  /// request's own timeout is only the longest wait for the next bytes); nothing goes on after.
  /// - Throws: ``RevueError`` (`.network`) saying `cannot <what>`: no reply, no complete reply
  ///   within `deadline`, or a body over ``maxBody``.
  private static func send(_ request: URLRequest, _ what: String, within deadline: Duration) async throws(RevueError)
    -> (Data, HTTPURLResponse)
  {
    let transfer = Transfer(limit: maxBody)
    let session = URLSession(configuration: .ephemeral, delegate: transfer, delegateQueue: nil)
    let task = session.dataTask(with: request)
    let timer = Task {
      try await Task.sleep(for: deadline)
      transfer.finish(.failure("no complete reply within \(deadline)"))
    }
    let result = await transfer.result { task.resume() }
    timer.cancel()
    // Cancelling waits for the session's work queue, which a server that floods its reply keeps
    // busy reading (0.1-7 s measured, the longer under load): it is done on a thread of its own,
    // never on the caller's (a thread of Swift's small cooperative pool), which has its answer now.
    Thread.detachNewThread {
      task.cancel()
      session.invalidateAndCancel()
    }
    switch result {
    case .success(let reply): return reply
    case .failure(let reason): throw RevueError(.network, "cannot \(what): \(reason.text)")
    }
  }

  /// One request's reply, gathered by its session's delegate up to a size, and its end: the
  /// first of the reply, a failure, or the deadline.
  private final class Transfer: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Safety (@unchecked): NSObject is not Sendable; the state is under the lock.
    struct Failure: Error, ExpressibleByStringLiteral, ExpressibleByStringInterpolation {
      var text: String
      init(stringLiteral text: String) { self.text = text }
      init(_ text: String) { self.text = text }
    }

    private struct State {
      var body = Data()
      var response: HTTPURLResponse?
      var outcome: Result<(Data, HTTPURLResponse), Failure>?
      var waiter: CheckedContinuation<Result<(Data, HTTPURLResponse), Failure>, Never>?
    }

    private let state = Mutex(State())
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Runs `start` and waits for the outcome.
    func result(_ start: () -> Void) async -> Result<(Data, HTTPURLResponse), Failure> {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state in
          if state.outcome == nil { state.waiter = continuation }
          return state.outcome
        }
        if let ready { continuation.resume(returning: ready) } else { start() }
      }
    }

    /// Settles the outcome, once.
    func finish(_ outcome: Result<(Data, HTTPURLResponse), Failure>) {
      let waiter = state.withLock { state -> CheckedContinuation<Result<(Data, HTTPURLResponse), Failure>, Never>? in
        guard state.outcome == nil else { return nil }
        state.outcome = outcome
        defer { state.waiter = nil }
        return state.waiter
      }
      waiter?.resume(returning: outcome)
    }

    private var tooBig: Failure { Failure("the reply is over \(limit / 1024) KiB (an SDP answer is a few KiB)") }

    func urlSession(
      _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
      completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
      guard response.expectedContentLength <= Int64(limit) else {
        finish(.failure(tooBig))
        return completionHandler(.cancel)
      }
      state.withLock { $0.response = response as? HTTPURLResponse }
      completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
      // Once settled, the rest is dropped: the waiter cancels the task, and libcurl reads on
      // until the cancel comes through (cancelling from here, the delegate queue, held it up).
      let over = state.withLock { state in
        guard state.outcome == nil else { return false }
        state.body.append(data.prefix(limit + 1 - state.body.count))
        return state.body.count > limit
      }
      if over { finish(.failure(tooBig)) }
    }

    /// A redirect to another origin goes without the token, as fetch drops `Authorization`
    /// there (and as the session's DELETE goes).
    func urlSession(
      _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
      newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
      var next = request
      if let from = task.originalRequest?.url, let to = request.url,
        WHIPExchange.origin(of: from) != WHIPExchange.origin(of: to)
      {
        next.setValue(nil, forHTTPHeaderField: "Authorization")
      }
      completionHandler(next)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
      let (body, response) = state.withLock { ($0.body, $0.response ?? task.response as? HTTPURLResponse) }
      if let response, error == nil {
        finish(.success((body, response)))
      } else {
        finish(.failure(Failure(error.map { $0.localizedDescription } ?? "no HTTP response")))
      }
    }
  }
}

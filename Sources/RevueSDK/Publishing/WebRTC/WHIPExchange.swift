import Foundation

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
    let request = HTTPClient.Request(
      method: "POST", url: endpoint, body: Data(offer.utf8), contentType: "application/sdp", token: token)
    let shown = WHIPPublication.redacted(endpoint)
    let response = try await send(request, "POST the offer to \(shown)", within: timeout)
    let text = String(decoding: response.body, as: UTF8.self)
    // What the endpoint said, on one line, without the token should it echo it.
    var quoted = text.prefix(200).split(whereSeparator: \.isNewline).joined(separator: " ")
    var reason = response.reason.isEmpty ? "" : " " + response.reason
    if let token, !token.isEmpty {
      quoted = quoted.replacingOccurrences(of: token, with: "…")
      reason = reason.replacingOccurrences(of: token, with: "…")
    }
    guard response.status == 201 else {
      throw RevueError(.network, "the \(server) \(shown) answered \(response.status)\(reason): \(quoted)")
    }
    guard text.hasPrefix("v=0") else {
      throw RevueError(.network, "the \(server) \(shown) answered 201 without an SDP answer: \(quoted)")
    }
    guard let location = response.value("Location"),
      let resource = URL(string: location, relativeTo: endpoint)?.absoluteURL
    else {
      throw RevueError(.network, "the \(server) \(shown) answered 201 without a Location")
    }
    return (text, resource, links(in: response.value("Link") ?? "", relativeTo: endpoint))
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
    let request = HTTPClient.Request(method: method, url: url, body: body, contentType: contentType, token: token)
    let response = try await send(request, "\(method) \(WHIPPublication.redacted(url))", within: timeout)
    let location = response.value("Location").flatMap { URL(string: $0, relativeTo: url) }
    return (response.status, response.body, location?.absoluteURL)
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
    let request = HTTPClient.Request(method: "DELETE", url: resource, token: token)
    let shown = WHIPPublication.redacted(resource)
    do {
      let response = try await send(request, "DELETE \(shown)", within: .seconds(5))
      if !(200..<300).contains(response.status) {
        RevueLog.log(.warning, category, "DELETE \(shown) answered \(response.status)")
      }
    } catch {
      RevueLog.log(.warning, category, "\(error)")
    }
  }

  /// The most a reply's body may hold: an SDP answer is a few KiB.
  static let maxBody = 256 * 1024

  /// Sends `request` and returns the reply, its body whole, within `deadline` in all; nothing
  /// goes on after (``HTTPClient``).
  /// - Throws: ``RevueError`` (`.network`) saying `cannot <what>`: no reply, no complete reply
  ///   within `deadline`, a body over ``maxBody``, an untrusted certificate.
  private static func send(_ request: HTTPClient.Request, _ what: String, within deadline: Duration)
    async throws(RevueError) -> HTTPClient.Response
  {
    do {
      return try await HTTPClient.send(request, maxBody: maxBody, within: deadline)
    } catch {
      throw RevueError(.network, "cannot \(what): \(error)")
    }
  }
}

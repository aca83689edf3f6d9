import Foundation
import Synchronization

/// A WHEP viewer's side of the layer selection (``LayerSelection``), when the server links it:
/// the size the video is shown at (the views of its track, ``RemoteVideoTrack``) picks the
/// smallest layer that covers it, as LiveKit's adaptive stream picks one, and the server is
/// asked for no larger one. The layers come from the server's `layers` event, read once; a
/// server that lists none is asked with `maxWidth` and `maxHeight` instead.
///
/// Requests go one at a time, the latest size wins: a view being resized asks once it settles.
final class WHEPLayerPreference: Sendable {
  /// A layer the server lists: its `rid` and size.
  struct Layer: Sendable, Hashable {
    var rid: String
    var dimensions: Dimensions
  }

  private let selection: URL
  private let events: URL?
  private let token: String?

  private struct State {
    /// The size asked for now (nil: the server's choice), and what was sent last.
    var wanted: Dimensions?
    var sent: Dimensions??
    /// Whether a request is on its way.
    var sending = false
    /// The `m=` section and layers of the server's `layers` event, once read (nil: none).
    var layers: (mediaId: String, layers: [Layer])??
    /// Requests answered so far.
    var answered = 0
  }
  private let state = Mutex(State())

  /// The preference of a session whose answer gave `links`, or nil when they have no layer
  /// selection; requests carry `token`.
  init?(links: [String: URL], token: String?) {
    guard let selection = links[LayerSelection.layerRelation] else { return nil }
    self.selection = selection
    events = links[LayerSelection.eventsRelation]
    self.token = token
  }

  /// Requests answered so far.
  var answered: Int { state.withLock { $0.answered } }

  /// Asks for the smallest layer that covers `size` (nil: the server's choice).
  func prefer(_ size: Dimensions?) {
    let start = state.withLock { state in
      state.wanted = size
      guard !state.sending, state.sent.map({ $0 != size }) ?? true else { return false }
      state.sending = true
      return true
    }
    if start { Task { await self.send() } }
  }

  /// Sends the latest wanted size until what was sent is the latest.
  private func send() async {
    while true {
      let (wanted, known) = state.withLock { ($0.wanted, $0.layers) }
      let layers: (mediaId: String, layers: [Layer])?
      if let known {
        layers = known
      } else {
        layers = await readLayers()
        state.withLock { $0.layers = .some(layers) }
      }
      let body = Self.request(for: wanted, layers: layers)
      do {
        let (status, reply, _) = try await WHIPExchange.request(
          "POST", selection, body: body, contentType: "application/json", token: token, timeout: .seconds(5))
        if !(200..<300).contains(status) {
          RevueLog.log(
            .warning, "WHEP",
            "the layer selection answered \(status): \(String(decoding: reply.prefix(200), as: UTF8.self))")
        }
      } catch {
        RevueLog.log(.warning, "WHEP", "\(error)")
      }
      let done = state.withLock { state in
        state.sent = .some(wanted)
        state.answered += 1
        guard state.wanted == wanted else { return false }
        state.sending = false
        return true
      }
      if done { return }
    }
  }

  /// The `layers` event the server's event stream gives: made with a `POST`, read with a `GET`.
  private func readLayers() async -> (mediaId: String, layers: [Layer])? {
    guard let events else { return nil }
    do {
      let made = try await WHIPExchange.request(
        "POST", events, body: Data(#"["layers"]"#.utf8), contentType: "application/json", token: token,
        timeout: .seconds(5))
      guard made.status == 201, let stream = made.location else { return nil }
      let read = try await WHIPExchange.request("GET", stream, token: token, timeout: .seconds(5))
      return Self.layers(inEvents: String(decoding: read.body, as: UTF8.self))
    } catch {
      RevueLog.log(.warning, "WHEP", "cannot read the layers: \(error)")
      return nil
    }
  }

  /// The video's `m=` section and its layers in the first `layers` event of server-sent
  /// events `text`, the full size first (as listed); nil without one.
  static func layers(inEvents text: String) -> (mediaId: String, layers: [Layer])? {
    var event = ""
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("event:") { event = line.dropFirst(6).trimmingCharacters(in: .whitespaces) }
      guard event == "layers", line.hasPrefix("data:"),
        let object = (try? JSONSerialization.jsonObject(with: Data(line.dropFirst(5).utf8))) as? [String: Any],
        let (mediaId, listed) = object.sorted(by: { $0.key < $1.key }).first,
        let entries = listed as? [[String: Any]]
      else { continue }
      let layers = entries.compactMap { entry -> Layer? in
        guard let rid = entry["rid"] as? String, let width = entry["width"] as? Int,
          let height = entry["height"] as? Int
        else { return nil }
        return Layer(rid: rid, dimensions: Dimensions(width: Int32(clamping: width), height: Int32(clamping: height)))
      }
      return layers.isEmpty ? nil : (mediaId, layers)
    }
    return nil
  }

  /// The body of a selection for `size` among `layers`: the `rid` of the smallest layer at
  /// least as large both ways (the largest when none is), `maxWidth` and `maxHeight` without
  /// layers, or nothing but the `mediaId` for the server's choice.
  static func request(for size: Dimensions?, layers: (mediaId: String, layers: [Layer])?) -> Data {
    var object: [String: Any] = [:]
    if let layers { object["mediaId"] = layers.mediaId }
    if let size {
      if let listed = layers?.layers {
        let covering = listed.filter { $0.dimensions.width >= size.width && $0.dimensions.height >= size.height }
        object["rid"] =
          (covering.min { $0.dimensions.width < $1.dimensions.width }
          ?? listed.max { $0.dimensions.width < $1.dimensions.width })?.rid
      } else {
        object["maxWidth"] = Int(size.width)
        object["maxHeight"] = Int(size.height)
      }
    }
    return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
  }
}

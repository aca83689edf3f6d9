import Foundation

/// WHEP's layer selection and the server-sent events that list the layers (the WHEP core
/// extensions draft, as Broadcast Box and live777 serve them), for a broadcast with simulcast
/// layers: a viewer asks for the largest layer it takes, say for the size it shows the video
/// at, and is sent the largest its path carries up to that one.
///
/// The answer to a viewer's offer links both (`Link` header fields, ``links(session:)``):
///
///     Link: </camera/whep/ID/layer>; rel="urn:ietf:params:whep:ext:core:layer"
///     Link: </camera/whep/ID/sse>; rel="urn:ietf:params:whep:ext:core:server-sent-events"; events="layers"
///
/// - `POST …/layer` with a JSON object: `rid` (a layer's: `f`, `h`, `q`, the full size first),
///   or `maxWidth` and `maxHeight` (the largest layer within both; the smallest when none is),
///   and `mediaId` (the video's `m=` line index, optional); neither `rid` nor a size gives the
///   choice back to the path. `200`, or `400` with a one-line reason.
/// - `POST …/sse` makes the viewer's event stream (`201`, its URL in `Location`), which `GET`
///   reads: a `layers` event, `{"MEDIAID": [{"rid", "width", "height", "bitrate",
///   "targetBitrate"}, …]}`, each layer's bitrate its encoder's, every layer active (all are
///   encoded while anyone watches). The layers do not change during a broadcast: each `GET`
///   answers with the event and ends, and asks to be read again after a minute (`retry`).
enum LayerSelection {
  /// The `rel` of the layer selection's link.
  static let layerRelation = "urn:ietf:params:whep:ext:core:layer"
  /// The `rel` of the server-sent events' link.
  static let eventsRelation = "urn:ietf:params:whep:ext:core:server-sent-events"
  /// The paths under a session's URL that this answers.
  static let paths: Set<String> = ["layer", "sse", "sse/events"]

  /// The `Link` header fields of the answer to an offer whose session is at `session`.
  static func links(session: String) -> [(String, String)] {
    [
      ("Link", "<\(session)/layer>; rel=\"\(layerRelation)\""),
      ("Link", "<\(session)/sse>; rel=\"\(eventsRelation)\"; events=\"layers\""),
    ]
  }

  /// Answers `request` for `path` (one of ``paths``) under the session of `viewer`, at `session`.
  static func answer(
    _ request: HTTPServer.Request, at path: String, for viewer: WebRTCBroadcast.Viewer, session: String
  ) -> HTTPServer.Response {
    let sizes = viewer.layers.map(\.dimensions)
    switch (request.method, path) {
    case ("POST", "layer"):
      do {
        viewer.bound(largest: try largest(asked: request.body, mediaId: viewer.mediaId, layers: sizes))
        return HTTPServer.Response(status: 200)
      } catch {
        return .text(400, error.message)
      }
    case ("POST", "sse"):
      return HTTPServer.Response(status: 201, headers: [("Location", session + "/sse/events")])
    case ("GET", "sse/events"):
      return HTTPServer.Response(
        status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")],
        body: Data(event(mediaId: viewer.mediaId, layers: viewer.layers).utf8))
    default:
      let allowed = path == "sse/events" ? "GET" : "POST"
      return .text(405, "\(allowed) here", headers: [("Allow", allowed)])
    }
  }

  /// The `layers` event of `layers` (the full size first) sent in the `m=` section `mediaId`.
  static func event(mediaId: String, layers: [VideoParameters]) -> String {
    let described: [[String: Any]] = zip(SimulcastSDP.rids(count: layers.count), layers).map { rid, layer in
      [
        "rid": rid, "width": Int(layer.dimensions.width), "height": Int(layer.dimensions.height),
        "bitrate": layer.encoding.maxBitrate, "targetBitrate": layer.encoding.maxBitrate,
      ]
    }
    let data = (try? JSONSerialization.data(withJSONObject: [mediaId: described], options: [.sortedKeys])) ?? Data()
    return "retry: 60000\nevent: layers\ndata: \(String(decoding: data, as: UTF8.self))\n\n"
  }

  /// The largest layer (its index, 0 the full size) a selection's `body` asks for, of layers of
  /// `layers`' sizes (the full size first) sent in the `m=` section `mediaId`; 0 (any) when it
  /// names none.
  /// - Throws: ``RevueError`` (`.invalidInput`) saying what is wrong: not a JSON object, another
  ///   `mediaId`, an unknown `rid`, a size that is not a positive number, or what the layers
  ///   cannot do (spatial and temporal layers).
  static func largest(asked body: Data, mediaId: String, layers: [Dimensions]) throws(RevueError) -> Int {
    guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
      throw RevueError(.invalidInput, "the layer selection must be a JSON object")
    }
    if let asked = object["mediaId"] {
      guard "\(asked)" == mediaId else {
        throw RevueError(.invalidInput, "mediaId \(asked) is not the video's: it is \(mediaId)")
      }
    }
    for field in ["spatialLayerId", "temporalLayerId", "maxSpatialLayerId", "maxTemporalLayerId"]
    where object[field] != nil {
      throw RevueError(.invalidInput, "\(field) is not taken: the layers are simulcast encodings, chosen by rid")
    }
    let rids = SimulcastSDP.rids(count: layers.count)
    if let rid = object["rid"] {
      guard let rid = rid as? String, let index = rids.firstIndex(of: rid) else {
        throw RevueError(.invalidInput, "no layer has rid \(rid): the layers are \(rids.joined(separator: ", "))")
      }
      return index
    }
    func bound(_ field: String) throws(RevueError) -> Int32? {
      guard let value = object[field] else { return nil }
      guard let number = value as? NSNumber, !(value is Bool), number.doubleValue >= 1 else {
        throw RevueError(.invalidInput, "\(field) must be a positive number of pixels, not \(value)")
      }
      return Int32(clamping: Int(number.doubleValue.rounded(.down)))
    }
    let (maxWidth, maxHeight) = (try bound("maxWidth"), try bound("maxHeight"))
    guard maxWidth != nil || maxHeight != nil else { return 0 }
    return layers.firstIndex { $0.width <= maxWidth ?? .max && $0.height <= maxHeight ?? .max } ?? layers.count - 1
  }
}

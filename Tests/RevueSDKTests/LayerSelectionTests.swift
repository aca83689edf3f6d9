import Foundation
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@testable import RevueSDK

/// Issue 30's adaptive stream over WHEP's layer selection (the WHEP core extensions draft): what
/// the server takes and says, what the viewer reads and asks, and a view's size picking the layer
/// of the node's own simulcast broadcast.
@Suite(.tier(.unit), .sharedProcess) struct LayerSelectionTests {
  /// 640×360 and 320×180, the full size first.
  let layers = [Dimensions(width: 640, height: 360), Dimensions(width: 320, height: 180)]

  func largest(_ json: String) throws(RevueError) -> Int {
    try LayerSelection.largest(asked: Data(json.utf8), mediaId: "0", layers: layers)
  }

  @Test func aSelectionNamesALayerByRidOrBySizeOrGivesTheChoiceBack() throws {
    #expect(try largest(#"{"mediaId": "0", "rid": "h"}"#) == 1)
    #expect(try largest(#"{"rid": "f"}"#) == 0)
    // The largest layer within the size; the smallest when none is.
    #expect(try largest(#"{"maxWidth": 640, "maxHeight": 360}"#) == 0)
    #expect(try largest(#"{"maxWidth": 639}"#) == 1)
    #expect(try largest(#"{"maxWidth": 100, "maxHeight": 100}"#) == 1)
    // Neither: the path's choice.
    #expect(try largest(#"{"mediaId": "0"}"#) == 0)
    #expect(try largest("{}") == 0)
  }

  @Test func aSelectionItCannotTakeIsRefusedSayingWhy() {
    let refusals = [
      ("[1, 2]", "must be a JSON object"), ("not json", "must be a JSON object"),
      (#"{"mediaId": "1", "rid": "h"}"#, "mediaId 1 is not the video's: it is 0"),
      (#"{"rid": "x"}"#, "no layer has rid x: the layers are f, h"),
      (#"{"maxWidth": -3}"#, "maxWidth must be a positive number of pixels"),
      (#"{"maxHeight": "tall"}"#, "maxHeight must be a positive number of pixels"),
      (#"{"spatialLayerId": 1}"#, "spatialLayerId is not taken"),
    ]
    for (body, reason) in refusals {
      #expect(throws: RevueError.self, "\(body)") { try largest(body) }
      do { _ = try largest(body) } catch { #expect(error.message.contains(reason), "\(body): \(error.message)") }
    }
  }

  @Test func theLayersEventIsReadBackAsItWasSentAndPicksTheSmallestLayerThatCovers() throws {
    let sent = layers.map { VideoParameters(dimensions: $0, encoding: VideoEncoding(maxBitrate: 500_000, maxFps: 30)) }
    let event = LayerSelection.event(mediaId: "0", layers: sent)
    #expect(event.hasPrefix("retry: 60000\nevent: layers\ndata: {\"0\":[{"))
    let read = try #require(WHEPLayerPreference.layers(inEvents: event))
    #expect(read.mediaId == "0")
    #expect(read.layers.map(\.rid) == ["f", "h"] && read.layers.map(\.dimensions) == layers)
    func asked(_ size: Dimensions?) -> [String: String] {
      let body = WHEPLayerPreference.request(for: size, layers: read)
      return ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]).mapValues { "\($0)" }
    }
    #expect(asked(Dimensions(width: 320, height: 180)) == ["mediaId": "0", "rid": "h"])
    #expect(asked(Dimensions(width: 321, height: 100)) == ["mediaId": "0", "rid": "f"])
    #expect(
      asked(Dimensions(width: 1920, height: 1080)) == ["mediaId": "0", "rid": "f"], "the largest when none covers")
    #expect(asked(nil) == ["mediaId": "0"])
    // A server that lists no layers is asked for a size.
    let bySize = WHEPLayerPreference.request(for: Dimensions(width: 320, height: 180), layers: nil)
    #expect(String(decoding: bySize, as: UTF8.self) == #"{"maxHeight":180,"maxWidth":320}"#)
    #expect(WHEPLayerPreference.layers(inEvents: "event: viewercount\ndata: {\"viewercount\":3}\n\n") == nil)
  }

  @Test func linkHeadersAreReadWithTheirRelationsAndResolved() {
    let base = URL(string: "http://127.0.0.1:8889/camera/whep")!
    let links = WHIPExchange.links(
      in: #"</camera/whep/ab/layer>; rel="urn:ietf:params:whep:ext:core:layer", "#
        + #"<stun:stun.example.org>; rel="ice-server"; username="a,b", "#
        + #"</camera/whep/ab/sse>; rel="urn:ietf:params:whep:ext:core:server-sent-events"; events="layers""#,
      relativeTo: base)
    #expect(links[LayerSelection.layerRelation]?.absoluteString == "http://127.0.0.1:8889/camera/whep/ab/layer")
    #expect(links[LayerSelection.eventsRelation]?.absoluteString == "http://127.0.0.1:8889/camera/whep/ab/sse")
    #expect(links["ice-server"]?.absoluteString == "stun:stun.example.org")
    #expect(WHIPExchange.links(in: "", relativeTo: base).isEmpty)
    #expect(WHIPExchange.links(in: "garbage; rel=x, <unclosed", relativeTo: base).isEmpty)
  }
}

/// A view's size picks the layer of the node's own simulcast broadcast, through WHEP's layer
/// selection: a 640×360 moving scene sent as 640×360 and 320×180.
@Suite(.tier(.interop), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct AdaptiveStreamTests {
  init() { TestEnvironment.prepare() }

  @MainActor @Test func aViewsSizePicksTheLayerItIsSent() async throws {
    let (track, capturer, scene) = try await MovingScene.track(width: 640, height: 360)
    defer { scene.stop() }
    let broadcast = try WebRTCBroadcast(track: track, port: 0, simulcast: true)
    defer { broadcast.stop() }
    let room = Room()
    let remote = try await room.watch(whep: broadcast.whepURL)
    let video = try #require(remote.videoTrack)
    let frames = FrameStream()
    video.add(videoRenderer: frames)
    let full = { @Sendable (frame: PixelBuffer) in frame.width == 640 && frame.height == 360 }
    let small = { @Sendable (frame: PixelBuffer) in frame.width == 320 && frame.height == 180 }
    // No view: the path's choice, the full size on loopback.
    _ = try await frames.next("the full size without a view", where: full)

    let layerChanges = broadcast.layerChanges
    let view = VideoView(size: Dimensions(width: 320, height: 180), target: .offscreen)
    view.track = video
    _ = try await frames.next("320×180 for a 320×180 view", where: small)
    let change = try await withDeadline(5, "the viewer's switch told") {
      for await viewer in layerChanges { return viewer }
      throw CancellationError()
    }
    #expect(change.layer == 1 && change.dimensions == Dimensions(width: 320, height: 180))
    // A view a pixel wider than the small layer: the full size covers it.
    view.size = Dimensions(width: 321, height: 180)
    _ = try await frames.next("the full size for a 321×180 view", where: full)
    // A hidden view does not count: the smallest layer.
    view.isHidden = true
    _ = try await frames.next("320×180 for a hidden view", where: small)
    // No view: the path's choice again.
    view.track = nil
    _ = try await frames.next("the full size once no view shows it", where: full)
    #expect(broadcast.viewers.first?.layer == 0)
    // What it cannot take gets 400 with the reason; a session it does not know, 404.
    let session = broadcast.whepURL.appendingPathComponent(try #require(broadcast.viewers.first?.id))
    let json = ["Content-Type": "application/json"]
    let (refused, reason) = try await WebRTCBroadcastTests.post(
      session.appendingPathComponent("layer"), #"{"rid": "z"}"#, headers: json)
    #expect(refused == 400 && reason == "no layer has rid z: the layers are f, h\n", "\(reason)")
    let (unknown, _) = try await WebRTCBroadcastTests.post(
      broadcast.whepURL.appendingPathComponent("nosuchsession/layer"), "{}", headers: json)
    #expect(unknown == 404)

    await room.disconnect()
    try await capturer.stopCapture()
  }
}

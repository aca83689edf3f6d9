import RevueTestSupport
import RevueVideoSDK
import Testing

// This file imports RevueVideoSDK only, as a port of seed 002 does: `EncodingLayer` is the
// face's.

/// Seed 002's types as a port writes them.
@Suite(.tier(.unit), .sharedProcess) struct PortTrapTests {
  /// `maxLayer`'s type is `EncodingLayer`, as in the seed, with the seed's cases: not RevueSDK's
  /// `EncodingLayer` (cases `.maxLayer2`, `.maxLayer3`), which the face re-exports.
  @Test func maxLayersTypeIsTheSeedsEncodingLayer() {
    let layer: EncodingLayer = .MAX_LAYER_2
    let call: (EncodingLayer) async throws -> CustomStreamTrack = { layer in
      try await VideoSDK.createCameraVideoTrack(maxLayer: layer)
    }
    _ = call
    #expect(layer.rawValue == 2 && EncodingLayer.MAX_LAYER_3.encodingLayer == .maxLayer3)
    #expect(EncodingLayer.allCases == [.MAX_LAYER_2, .MAX_LAYER_3])
    let old: MaxLayer = .MAX_LAYER_3
    #expect(old == .MAX_LAYER_3)
  }
}

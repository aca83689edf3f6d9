import Foundation
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct SimulcastTests {
  init() { TestEnvironment.prepare() }

  @Test func layersFollowLiveKitsRuleAndKeepTheAspectRatio() {
    let sizes = { (options: VideoPublishOptions, size: Dimensions) in options.layers(for: size).map(\.dimensions) }
    let on = VideoPublishOptions(simulcast: true)
    #expect(sizes(on, .h720_169) == [.h720_169, .h360_169, .h180_169])
    #expect(sizes(on, .h480_43) == [.h480_43, .h180_43])  // 640 wide: two layers
    #expect(sizes(on, .h240_43) == [.h240_43])  // under 480: none
    #expect(sizes(VideoPublishOptions(simulcast: true, maxLayer: .maxLayer2), .h1080_169) == [.h1080_169, .h180_169])
    // By destination (nil): one layer to point-to-point RTP, the layers to an SFU (WHIP); an
    // explicit choice holds for both.
    #expect(VideoPublishOptions().simulcast == nil && sizes(VideoPublishOptions(), .h1080_169) == [.h1080_169])
    #expect(VideoPublishOptions().layers(for: .h720_169, toSFU: true).map(\.dimensions) == sizes(on, .h720_169))
    #expect(VideoPublishOptions(simulcast: false).layers(for: .h720_169, toSFU: true).count == 1)
    // A portrait track: the layers' shorter side is the preset's.
    #expect(sizes(on, .h720_169.swapped) == [.h720_169.swapped, .h360_169.swapped, .h180_169.swapped])
    // Layers of the user's, at its encodings.
    let custom = VideoPublishOptions(simulcast: true, simulcastLayers: [.presetH540_169, .presetH216_169])
    #expect(
      custom.layers(for: .h1080_169).map(\.encoding) == [
        VideoEncoding.forDimensions(.h1080_169), VideoParameters.presetH540_169.encoding,
        VideoParameters.presetH216_169.encoding,
      ])
    #expect(VideoParameters.suggestedEncoding(for: .h720_169) == VideoParameters.presetH720_169.encoding)
    #expect(VideoParameters.suggestedEncoding(for: .h480_43) == VideoParameters.presetH480_43.encoding)
    #expect(VideoParameters.suggestedEncoding(for: Dimensions(width: 7680, height: 4320)).maxBitrate == 8_000_000)
  }

  @Test(arguments: [VideoCodec.vp8, .h264]) func eachLayerIsItsOwnStreamAtItsOwnSize(_ codec: VideoCodec) async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp(pairs: 4)  // three layers and the audio
      let (sending, participant, capturer) = try await TestCameras.sendingRoom(
        to: port, camera: devices[0], dimensions: .h720_169)
      let publication = try await participant.publish(
        videoTrack: participant.cameraTrack, options: VideoPublishOptions(simulcast: true, preferredCodec: codec))
      #expect(publication.layers.map(\.dimensions) == [.h720_169, .h360_169, .h180_169])
      #expect(publication.ports == [port, port + 2, port + 4])
      #expect(Set(publication.ssrcs).count == 3)
      // The next publication takes the next free pair.
      let audio = try await participant.publish(audioTrack: LocalAudioTrack.createBufferTrack())
      #expect(audio.port == port + 6)

      let sdp = sending.sdp
      #expect(sdp.components(separatedBy: "m=video ").count == 4)
      for (index, ssrc) in publication.ssrcs.enumerated() {
        #expect(sdp.contains("m=video \(port + 2 * index) RTP/AVPF 96"))
        #expect(sdp.contains("a=ssrc:\(ssrc) cname:"))
      }
      #expect(sdp.contains("a=content:main") && sdp.contains("a=imageattr:96 send [x=320,y=180]"))

      // A receiver on each layer's port decodes frames of that layer's size.
      let receiving = Room()
      var renderers: [FrameStream] = []
      for layerPort in publication.ports {
        let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(layerPort)?codec=\(codec)")!)
        let renderer = FrameStream()
        remote.videoTrack!.add(videoRenderer: renderer)
        renderers.append(renderer)
      }
      try await capturer.startCapture()
      for (renderer, layer) in zip(renderers, publication.layers) {
        let frame = try await renderer.next()
        #expect(frame.dimensions == layer.dimensions)
      }
      for layer in 0..<3 {
        let statistics = try #require(publication.statistics(layer: layer))
        #expect(statistics.framesEncoded > 0 && statistics.packetsSent > 0)
      }
      // The layers first, the total after: packets sent between the two reads count only in the total.
      let layers = (0..<3).compactMap { publication.statistics(layer: $0)?.packetsSent }.reduce(0, +)
      let total = publication.statistics
      #expect(total.packetsSent >= layers)
      let full = try #require(publication.statistics(layer: 0))
      #expect(total.framesEncoded <= full.framesEncoded)
      #expect(publication.statistics(layer: 3) == nil)
      try await capturer.stopCapture()
      await sending.disconnect()
      await receiving.disconnect()
    }
  }
}

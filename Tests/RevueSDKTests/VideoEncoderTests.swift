import GStreamer
import RevueTestSupport
import Testing

@testable import RevueSDK

/// A layer's encoder as a typed value: its elements are made with their settings typed, none
/// edited in a pipeline string.
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct VideoEncoderTests {
  init() { TestEnvironment.prepare() }

  /// Each chain is made element by element into a real bin whose encoder has the name asked
  /// for and the layer's bitrate in its own unit, ahead of the payloader; the H.264 parameter
  /// sets come from the parser, once per keyframe, not before every slice.
  @Test(arguments: [VideoCodec.vp8, .h264]) func aChainIsABinWithTheEncoderNamedAsAsked(_ codec: VideoCodec) throws {
    let layer = VideoParameters(dimensions: .h360_169, encoding: VideoEncoding(maxBitrate: 600_000, maxFps: 30))
    let encoder = VideoEncoder(codec, layer, scaled: true)
    #expect(encoder.codec == codec && encoder.keyframeInterval == 60)
    let bin = try encoder.chain(encoderName: "encoder2").payloading(as: "payloader2", payloadType: 96).bin()
    let element = try #require(bin.element(named: "encoder2"))
    #expect(element.factoryName == encoder.factory.rawValue)
    let (property, value) = encoder.factory.bitrate(600_000)
    #expect(try element.get(property, as: Int.self) == value)
    let payloader = try #require(bin.element(named: "payloader2"))
    #expect(payloader.factoryName == (codec == .vp8 ? "rtpvp8pay" : "rtph264pay"))
    #expect(try payloader.get("pt", as: Int.self) == 96)
    #expect(bin.staticPad("sink") != nil && bin.staticPad("src") != nil)
    if codec == .h264 {
      #expect(
        bin.elements.first { $0.factoryName == "h264parse" }.map { try? $0.get("config-interval", as: Int.self) } == -1)
    }
  }

  /// The description an RTSP media factory takes, written from the same chain, parses into the
  /// same elements with the same settings as the chain makes.
  @Test(arguments: [VideoCodec.vp8, .h264]) func theLaunchDescriptionMakesTheSameElements(_ codec: VideoCodec) throws {
    let layer = VideoParameters(dimensions: .h360_169, encoding: VideoEncoding(maxBitrate: 600_000, maxFps: 30))
    let chain =
      [SourceFeed.source()]
      + (try VideoEncoder(codec, layer, scaled: true).chain()).payloading(as: "pay0", payloadType: 96)
    let parsed = try Bin(parsing: chain.launchDescription)
    let made = try chain.bin()
    for recipe in chain.elements {
      let matches = { (bin: Bin) in bin.elements.filter { $0.factoryName == recipe.factory } }
      let (a, b) = (matches(parsed), matches(made))
      try #require(a.count == b.count && !a.isEmpty, "\(recipe.factory)")
      for (property, _) in recipe.properties {
        #expect(
          try a[0].get(property, as: Value.self) == b[0].get(property, as: Value.self), "\(recipe.factory) \(property)")
      }
    }
  }

  @Test func theBitrateIsInEachElementsUnit() {
    #expect(VideoEncoder.Factory.vp8enc.bitrate(212_400) == ("target-bitrate", 212_400))
    #expect(VideoEncoder.Factory.x264enc.bitrate(212_400) == ("bitrate", 212))
    #expect(VideoEncoder.Factory.x264enc.bitrate(100) == ("bitrate", 1))
    #expect(VideoEncoder.Factory.openh264enc.bitrate(212_400) == ("bitrate", 212_400))
  }
}

import GStreamer
import RevueTestSupport
import Testing

@testable import RevueSDK

/// A layer's encoder as a typed value: its element, settings and names come from it, none edited
/// in a pipeline string afterwards.
@Suite(.sharedProcess, .timeLimit(.minutes(1))) struct VideoEncoderTests {
  init() { TestEnvironment.prepare() }

  /// Each description parses into a real bin whose encoder has the name asked for and the
  /// layer's bitrate in its own unit, ahead of the payloader.
  @Test(arguments: [VideoCodec.vp8, .h264]) func aDescriptionIsABinWithTheEncoderNamedAsAsked(_ codec: VideoCodec)
    throws
  {
    let layer = VideoParameters(dimensions: .h360_169, encoding: VideoEncoding(maxBitrate: 600_000, maxFps: 30))
    let encoder = VideoEncoder(codec, layer, scaled: true)
    #expect(encoder.codec == codec && encoder.keyframeInterval == 60)
    let bin = try Bin(parsing: encoder.description(encoderName: "encoder2") + " name=payloader2")
    let element = try #require(bin.element(named: "encoder2"))
    #expect(element.factoryName == encoder.factory.rawValue)
    let (property, value) = encoder.factory.bitrate(600_000)
    #expect(try element.get(property, as: Int.self) == value)
    #expect(bin.element(named: "payloader2")?.factoryName == (codec == .vp8 ? "rtpvp8pay" : "rtph264pay"))
    if codec == .h264 {
      // The parameter sets once per keyframe, by the parser, not before every slice.
      #expect(encoder.description().contains("h264parse config-interval=-1 ! rtph264pay aggregate-mode"))
    }
  }

  @Test func theBitrateIsInEachElementsUnit() {
    #expect(VideoEncoder.Factory.vp8enc.bitrate(212_400) == ("target-bitrate", 212_400))
    #expect(VideoEncoder.Factory.x264enc.bitrate(212_400) == ("bitrate", 212))
    #expect(VideoEncoder.Factory.x264enc.bitrate(100) == ("bitrate", 1))
    #expect(VideoEncoder.Factory.openh264enc.bitrate(212_400) == ("bitrate", 212_400))
  }
}

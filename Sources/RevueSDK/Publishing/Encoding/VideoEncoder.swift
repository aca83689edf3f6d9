import Foundation
import GStreamer

/// How one video layer is encoded: the GStreamer element that encodes it, its real-time
/// settings (typed values), the raw format it takes, its bitrate in the element's own unit and
/// how to change it while playing, and its part of a send pipeline (from raw frames to the
/// payloader) as an ``ElementChain``.
///
/// VP8 is `vp8enc`; H.264 is `x264enc` (constrained baseline, tuned for zero latency), or
/// `openh264enc` where x264enc is missing. A keyframe comes at least every 2 s of frames, and
/// whenever a `GstForceKeyUnit` event reaches the encoder (a receiver's PLI or FIR, a new RTSP
/// client).
struct VideoEncoder: Sendable, Hashable {
  /// The encoding elements Revue drives.
  enum Factory: String, Sendable, Hashable {
    case vp8enc, x264enc, openh264enc

    /// The element's bitrate property, and the value it takes for `bitsPerSecond`: `vp8enc`'s
    /// `target-bitrate` and `openh264enc`'s `bitrate` are in bit/s, `x264enc`'s `bitrate` in
    /// kbit/s.
    /// The element's property for the most frames between two keyframes.
    var keyframeIntervalProperty: String {
      switch self {
      case .vp8enc: "keyframe-max-dist"
      case .x264enc: "key-int-max"
      case .openh264enc: "gop-size"
      }
    }

    func bitrate(_ bitsPerSecond: Int) -> (property: String, value: Int) {
      switch self {
      case .vp8enc: ("target-bitrate", bitsPerSecond)
      case .x264enc: ("bitrate", max(1, (bitsPerSecond + 500) / 1000))
      case .openh264enc: ("bitrate", bitsPerSecond)
      }
    }
  }

  /// The element that encodes.
  let factory: Factory
  /// The layer's size, bitrate and frame rate.
  let layer: VideoParameters
  /// Whether frames are scaled to the layer's size and at most its frame rate before the
  /// encoder (a simulcast layer smaller than what the track gives).
  let scaled: Bool

  /// The encoder of `layer` in `codec`, chosen from the elements this machine has.
  init(_ codec: VideoCodec, _ layer: VideoParameters, scaled: Bool) {
    factory = codec == .vp8 ? .vp8enc : (Gst.hasElement("x264enc") ? .x264enc : .openh264enc)
    self.layer = layer
    self.scaled = scaled
  }

  /// What it encodes to.
  var codec: VideoCodec { factory == .vp8enc ? .vp8 : .h264 }

  /// Frames between two keyframes at most: 2 s.
  var keyframeInterval: Int { max(1, layer.encoding.maxFps * 2) }

  /// The raw formats the encoder takes without a conversion: I420 for `vp8enc`, NV12 and I420
  /// for the H.264 encoders.
  var rawFormats: Value { factory == .vp8enc ? .string("I420") : .list([.string("NV12"), .string("I420")]) }

  /// The element's properties, in the order they are set.
  ///
  /// VP8's rate control keeps libwebrtc's buffer (1 s, starting at 0.5 s, aiming at 0.6 s) and
  /// overshoot (15 %), not libvpx's 6 s: with a 6 s buffer a bitrate set while playing is not
  /// followed for seconds (measured: from 200 kb/s to 1.5 Mb/s, a burst, then 70–180 kb/s for
  /// 5 s; with libwebrtc's, 1.4 Mb/s within a second), which congestion control relies on.
  var properties: KeyValuePairs<String, Value> {
    let bitrate = factory.bitrate(layer.encoding.maxBitrate)
    let keyframeInterval = Value.int(keyframeInterval)
    switch factory {
    case .vp8enc:
      return [
        "deadline": .int(1), "cpu-used": .int(8), "end-usage": .enumeration("cbr"),
        bitrate.property: .int(bitrate.value),
        factory.keyframeIntervalProperty: keyframeInterval, "lag-in-frames": .int(0),
        "error-resilient": .flags(["default"]),
        "threads": .int(LocalTrackPublication.vp8Threads(for: layer.dimensions)), "buffer-size": .int(1000),
        "buffer-initial-size": .int(500), "buffer-optimal-size": .int(600), "overshoot": .int(15),
      ]
    case .x264enc:
      return [
        "tune": .flags(["zerolatency"]), "speed-preset": .enumeration("ultrafast"),
        bitrate.property: .int(bitrate.value),
        factory.keyframeIntervalProperty: keyframeInterval,
      ]
    case .openh264enc:
      return [
        "complexity": .enumeration("low"), bitrate.property: .int(bitrate.value),
        factory.keyframeIntervalProperty: keyframeInterval,
      ]
    }
  }

  /// From raw frames to the payloader: the conversion (and scaling), the encoder named
  /// `encoderName`, and for H.264 the profile and the parser; the payloader last, so that the
  /// caller sets its own properties (`pt`, `ssrc`, its name…) on it.
  ///
  /// The H.264 parameter sets go before each keyframe, once: `h264parse` inserts them at the
  /// start of the access unit. `rtph264pay`'s `config-interval` inserts them before every IDR
  /// slice, and x264's zero-latency keyframes have several slices: ffmpeg then split each
  /// keyframe in two frames of one timestamp, the first corrupt.
  /// - Throws: ``GStreamerError`` when a caps field does not take its value (never for the
  ///   values above).
  func chain(encoderName: String = "encoder") throws(GStreamerError) -> ElementChain {
    let size = layer.dimensions
    var chain: ElementChain
    if scaled {
      chain = [
        ElementRecipe("videorate", ["drop-only": .bool(true), "max-rate": .int(layer.encoding.maxFps)]),
        ElementRecipe("videoscale"), ElementRecipe("videoconvert"),
        try .caps(
          "video/x-raw",
          [
            "format": "I420", "width": Int32(size.width), "height": Int32(size.height),
            "pixel-aspect-ratio": Fraction(1, 1),
          ]),
      ]
    } else {
      chain = [ElementRecipe("videoconvert"), try .caps("video/x-raw", ["format": rawFormats])]
    }
    chain.elements.append(ElementRecipe(factory.rawValue, name: encoderName, properties))
    let parse = ElementRecipe("h264parse", ["config-interval": .int(-1)])
    let pay = ElementRecipe("rtph264pay", ["aggregate-mode": .enumeration("zero-latency")])
    switch factory {
    case .vp8enc:
      chain.elements.append(ElementRecipe("rtpvp8pay", ["picture-id-mode": .enumeration("15-bit")]))
    case .x264enc:
      chain.elements += [try .caps("video/x-h264", ["profile": "constrained-baseline"]), parse, pay]
    case .openh264enc:
      chain.elements += [parse, pay]
    }
    return chain
  }

  /// Asks the encoder upstream of `output` (its payloader's source pad, say) for a keyframe with
  /// its parameter sets, as a receiver's PLI does.
  static func requestKeyframe(upstreamOf output: Pad) {
    guard let request = try? Structure("GstForceKeyUnit, all-headers=(boolean)true") else { return }
    output.send(event: .customUpstream(request))
  }

  /// Sets `encoder`'s bitrate to `bitsPerSecond`, in its unit; an element Revue does not drive
  /// is left alone. All three take a new bitrate while playing (vp8enc reconfigures libvpx at
  /// once, x264enc at its next frame).
  static func setBitrate(_ bitsPerSecond: Int, of encoder: GStreamer.Element) {
    guard let factory = encoder.factoryName.flatMap(Factory.init(rawValue:)) else { return }
    let bitrate = factory.bitrate(bitsPerSecond)
    do {
      try encoder.set(bitrate.property, bitrate.value)
    } catch {
      RevueLog.log(.warning, "Publication", "cannot set the bitrate of \(encoder.name): \(error)")
    }
  }
}

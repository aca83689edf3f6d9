import Foundation
import GStreamer

/// How one video layer is encoded: the GStreamer element that encodes it, its real-time
/// settings, the raw format it takes, its bitrate in the element's own unit, and its part of a
/// send pipeline (from raw frames to the payloader) in gst-launch syntax, every name in it
/// given, none edited afterwards.
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
  var rawFormats: String { factory == .vp8enc ? "I420" : "{NV12,I420}" }

  /// The element's properties, in order, as gst-launch writes them.
  ///
  /// VP8's rate control keeps libwebrtc's buffer (1 s, starting at 0.5 s, aiming at 0.6 s) and
  /// overshoot (15 %), not libvpx's 6 s: with a 6 s buffer a bitrate set while playing is not
  /// followed for seconds (measured: from 200 kb/s to 1.5 Mb/s, a burst, then 70–180 kb/s for
  /// 5 s; with libwebrtc's, 1.4 Mb/s within a second), which congestion control relies on.
  var properties: KeyValuePairs<String, String> {
    let bitrate = factory.bitrate(layer.encoding.maxBitrate)
    switch factory {
    case .vp8enc:
      return [
        "deadline": "1", "cpu-used": "8", "end-usage": "cbr", bitrate.property: "\(bitrate.value)",
        "keyframe-max-dist": "\(keyframeInterval)", "lag-in-frames": "0", "error-resilient": "default",
        "threads": "\(LocalTrackPublication.vp8Threads(for: layer.dimensions))", "buffer-size": "1000",
        "buffer-initial-size": "500", "buffer-optimal-size": "600", "overshoot": "15",
      ]
    case .x264enc:
      return [
        "tune": "zerolatency", "speed-preset": "ultrafast", bitrate.property: "\(bitrate.value)",
        "key-int-max": "\(keyframeInterval)",
      ]
    case .openh264enc:
      return ["complexity": "low", bitrate.property: "\(bitrate.value)", "gop-size": "\(keyframeInterval)"]
    }
  }

  /// From raw frames to the payloader, in gst-launch syntax: the conversion (and scaling), the
  /// encoder named `encoderName`, and for H.264 the profile and the parser; the payloader last,
  /// so that the caller can add its own properties (`pt`, `ssrc`, `name`…) after it.
  ///
  /// The H.264 parameter sets go before each keyframe, once: `h264parse` inserts them at the
  /// start of the access unit. `rtph264pay`'s `config-interval` inserts them before every IDR
  /// slice, and x264's zero-latency keyframes have several slices: ffmpeg then split each
  /// keyframe in two frames of one timestamp, the first corrupt.
  func description(encoderName: String = "encoder") -> String {
    let size = layer.dimensions
    let convert =
      scaled
      ? "videorate drop-only=true max-rate=\(layer.encoding.maxFps) ! videoscale ! videoconvert"
        + " ! video/x-raw,format=I420,width=\(size.width),height=\(size.height),pixel-aspect-ratio=1/1"
      : "videoconvert ! video/x-raw,format=\(rawFormats)"
    let encoder =
      "\(factory.rawValue) name=\(encoderName) " + properties.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    switch factory {
    case .vp8enc:
      return "\(convert) ! \(encoder) ! rtpvp8pay picture-id-mode=15-bit"
    case .x264enc:
      return "\(convert) ! \(encoder) ! video/x-h264,profile=constrained-baseline"
        + " ! h264parse config-interval=-1 ! rtph264pay aggregate-mode=zero-latency"
    case .openh264enc:
      return "\(convert) ! \(encoder) ! h264parse config-interval=-1 ! rtph264pay aggregate-mode=zero-latency"
    }
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

import Foundation
import GStreamer

/// How one video layer is encoded: the GStreamer element that encodes it, its real-time
/// settings (typed values), the raw format it takes, its bitrate in the element's own unit and
/// how to change it while playing, and its part of a send pipeline (from raw frames to the
/// payloader) as an ``ElementChain``.
///
/// VP8 is `vp8enc`; H.264 is `x264enc` (constrained baseline, tuned for zero latency), or
/// `openh264enc` where x264enc is missing. A keyframe comes at least every 2 s of frames (or
/// ``keyframeSeconds``), and whenever a `GstForceKeyUnit` event reaches the encoder (a
/// receiver's PLI or FIR, a new RTSP client).
///
/// Hardware encoders (``Factory/hardware``) are preferred where the machine has them, for an
/// RTP publication (``Factory/preferred(for:environment:)``); one that cannot start gives way to
/// the software encoder of its codec (``LocalTrackPublication``).
struct VideoEncoder: Sendable, Hashable {
  /// The encoding elements Revue drives.
  ///
  /// The hardware ones, and where each unit comes from: GStreamer's documentation of each
  /// element (gstreamer.freedesktop.org/documentation/{va/vah264enc, vaapi/vaapih264enc,
  /// nvcodec/nvh264enc, video4linux2/v4l2h264enc}), checked against the property specs in
  /// GStreamer's source (gst-plugins-bad `sys/va`, `sys/nvcodec`; gst-plugins-good `sys/v4l2`;
  /// gstreamer-vaapi). None was run on real hardware here: see docs/hardware-encoders.md.
  /// - `vah264enc` (va plugin, plugins-bad): `bitrate` "expressed in kbps", mutable while
  ///   playing; `key-int-max` in frames; `rate-control` `cbr`; `b-frames` 0. Takes NV12
  ///   (`video/x-raw`, or without a copy `video/x-raw(memory:VAMemory)`).
  /// - `vaapih264enc` (gstreamer-vaapi, the older VA-API plugin): `bitrate` in kbps,
  ///   `keyframe-period` in frames, `rate-control` `cbr`, `max-bframes` 0. Takes NV12 (or
  ///   `memory:VASurface`, `memory:DMABuf`).
  /// - `vavp8enc` (va plugin, GStreamer 1.26 on; not in Debian's 1.22): `bitrate` in kbps,
  ///   mutable while playing; `key-int-max` in frames; `rate-control` `cbr`. Takes NV12 (or
  ///   `memory:VAMemory`).
  /// - `v4l2h264enc` (video4linux2 plugin, a V4L2 memory-to-memory encoder such as the Raspberry
  ///   Pi's bcm2835-codec): no bitrate property; the V4L2 controls go in `extra-controls`, a
  ///   structure whose fields are the controls' names, applied to the device at once when it is
  ///   open: `video_bitrate` (V4L2_CID_MPEG_VIDEO_BITRATE, bit/s) and `h264_i_frame_period`
  ///   (frames). Takes NV12 among others (or `memory:DMABuf`); a keyframe request becomes
  ///   V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME.
  /// - `nvh264enc` (nvcodec plugin, NVENC): `bitrate` "in kbit/sec"; `gop-size` in frames;
  ///   `rc-mode` `cbr`; `preset` `low-latency-hp` (kept, deprecated for `p1`…`p7` in newer
  ///   releases); `zerolatency` true. Takes NV12 (or `memory:CUDAMemory`, `memory:GLMemory`).
  ///
  /// Every one of them is a `GstVideoEncoder`, which turns a `GstForceKeyUnit` event into a
  /// keyframe request to the codec: ``requestKeyframe(upstreamOf:)`` works the same for all.
  enum Factory: String, Sendable, Hashable, CaseIterable {
    case vp8enc, x264enc, openh264enc
    case vah264enc, vaapih264enc, vavp8enc, v4l2h264enc, nvh264enc

    /// The hardware encoders, in the order they are preferred: VA-API's current plugin before
    /// its older one, NVENC, then V4L2's (a single-board computer has only that one).
    static let hardware: [Factory] = [.vah264enc, .vaapih264enc, .nvh264enc, .v4l2h264enc, .vavp8enc]

    /// What it encodes to.
    var codec: VideoCodec { self == .vp8enc || self == .vavp8enc ? .vp8 : .h264 }

    /// Whether it is a hardware encoder.
    var isHardware: Bool { Self.hardware.contains(self) }

    /// The memory a hardware encoder takes frames in without a copy (its sink caps feature),
    /// for `revue check` and the docs: Revue hands it system memory (NV12) today.
    var zeroCopyMemory: String? {
      switch self {
      case .vah264enc, .vavp8enc: "memory:VAMemory"
      case .vaapih264enc: "memory:VASurface, memory:DMABuf"
      case .v4l2h264enc: "memory:DMABuf"
      case .nvh264enc: "memory:CUDAMemory, memory:GLMemory"
      case .vp8enc, .x264enc, .openh264enc: nil
      }
    }

    /// The software encoder of `codec`: `vp8enc`; `x264enc`, or `openh264enc` without it.
    static func software(for codec: VideoCodec) -> Factory {
      codec == .vp8 ? .vp8enc : (Gst.hasElement("x264enc") ? .x264enc : .openh264enc)
    }

    /// The encoder of `codec` to try first: the first hardware encoder of that codec this
    /// machine has, unless `REVUE_ENCODER=software` in `environment`; else the software one.
    /// Another value than `software` or `auto` is logged and ignored.
    static func preferred(
      for codec: VideoCodec, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Factory {
      switch environment["REVUE_ENCODER"] {
      case "software": return software(for: codec)
      case nil, "", "auto": break
      case let other?:
        RevueLog.log(.warning, "Publication", "REVUE_ENCODER=\(other) ignored: it takes software or auto")
      }
      return hardware.first { $0.codec == codec && Gst.hasElement($0.rawValue) } ?? software(for: codec)
    }

    /// The hardware encoders this machine has, in the order they are preferred.
    static var installedHardware: [Factory] { hardware.filter { Gst.hasElement($0.rawValue) } }

    /// The element's bitrate property (for `v4l2h264enc`, the V4L2 control in its
    /// `extra-controls`), and the value it takes for `bitsPerSecond` (units as in ``Factory``): `vp8enc`'s
    /// `target-bitrate`, `openh264enc`'s `bitrate` and `v4l2h264enc`'s `video_bitrate` are in
    /// bit/s; `x264enc`'s, `vah264enc`'s, `vaapih264enc`'s, `vavp8enc`'s and `nvh264enc`'s
    /// `bitrate` in kbit/s.
    func bitrate(_ bitsPerSecond: Int) -> (property: String, value: Int) {
      switch self {
      case .vp8enc: ("target-bitrate", bitsPerSecond)
      case .x264enc, .vah264enc, .vaapih264enc, .vavp8enc, .nvh264enc: ("bitrate", max(1, (bitsPerSecond + 500) / 1000))
      case .openh264enc: ("bitrate", bitsPerSecond)
      case .v4l2h264enc: ("video_bitrate", bitsPerSecond)
      }
    }

    /// `v4l2h264enc`'s `extra-controls`: the bitrate and the keyframe interval as V4L2 controls.
    static func v4l2Controls(bitsPerSecond: Int, keyframeInterval: Int) -> Structure {
      var controls = Structure(name: "controls")
      try? controls.set("video_bitrate", Int32(clamping: bitsPerSecond))
      try? controls.set("h264_i_frame_period", Int32(clamping: keyframeInterval))
      return controls
    }
  }

  /// The element that encodes.
  let factory: Factory
  /// The layer's size, bitrate and frame rate.
  let layer: VideoParameters
  /// Whether frames are scaled to the layer's size and at most its frame rate before the
  /// encoder (a simulcast layer smaller than what the track gives).
  let scaled: Bool
  /// Seconds between two keyframes at most: 2 (a recording's own encoder makes them every
  /// second, so that its 2 s segments start on one).
  var keyframeSeconds = 2
  /// Whether VP8 drops a frame rather than overshoot its rate-control buffer
  /// (`dropframe-threshold` 30 %, libwebrtc's `rc_dropframe_thresh`): after a decrease its
  /// output follows the new target within a frame or two, where libvpx otherwise spent the
  /// buffer it had for 1–2 s above it. Off by default (an RTP publication keeps every frame);
  /// a WHIP session's single layer turns it on: through a 250 kb/s cap to aiortc, its stream
  /// went on sending 240–280 kb/s for a second after the receiver's estimate cut the target to
  /// 190–205, lost a packet and froze aiortc 3–4 s (3 of 9 runs under 25 fps in some second
  /// without it, 0 of 8 with it, at the same load, 2026-12-08).
  var dropsFramesOverBudget = false

  /// The encoder of `layer` in `codec`: `factory`, or the software one this machine has.
  init(_ codec: VideoCodec, _ layer: VideoParameters, scaled: Bool, factory: Factory? = nil) {
    precondition(factory.map { $0.codec == codec } ?? true, "\(factory!) does not encode \(codec)")
    self.factory = factory ?? Factory.software(for: codec)
    self.layer = layer
    self.scaled = scaled
  }

  /// What it encodes to.
  var codec: VideoCodec { factory.codec }

  /// Frames between two keyframes at most: ``keyframeSeconds`` of them.
  var keyframeInterval: Int { max(1, layer.encoding.maxFps * keyframeSeconds) }

  /// The raw formats the encoder takes without a conversion: I420 for `vp8enc`, NV12 and I420
  /// for the software H.264 encoders, NV12 for the hardware ones (each takes NV12 in system
  /// memory by its documented sink caps; see ``Factory``).
  var rawFormats: Value {
    switch factory {
    case .vp8enc: .string("I420")
    case .x264enc, .openh264enc: .list([.string("NV12"), .string("I420")])
    case .vah264enc, .vaapih264enc, .vavp8enc, .v4l2h264enc, .nvh264enc: .string("NV12")
    }
  }

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
        "keyframe-max-dist": keyframeInterval, "lag-in-frames": .int(0), "error-resilient": .flags(["default"]),
        "threads": .int(LocalTrackPublication.vp8Threads(for: layer.dimensions)), "buffer-size": .int(1000),
        "buffer-initial-size": .int(500), "buffer-optimal-size": .int(600), "overshoot": .int(15),
        "dropframe-threshold": .int(dropsFramesOverBudget ? 30 : 0),
      ]
    case .x264enc:
      return [
        "tune": .flags(["zerolatency"]), "speed-preset": .enumeration("ultrafast"),
        bitrate.property: .int(bitrate.value),
        "key-int-max": keyframeInterval,
      ]
    case .openh264enc:
      return ["complexity": .enumeration("low"), bitrate.property: .int(bitrate.value), "gop-size": keyframeInterval]
    case .vah264enc:
      return [
        "rate-control": .enumeration("cbr"), "b-frames": .int(0), bitrate.property: .int(bitrate.value),
        "key-int-max": keyframeInterval,
      ]
    case .vavp8enc:
      return [
        "rate-control": .enumeration("cbr"), bitrate.property: .int(bitrate.value), "key-int-max": keyframeInterval,
      ]
    case .vaapih264enc:
      return [
        "rate-control": .enumeration("cbr"), "max-bframes": .int(0), bitrate.property: .int(bitrate.value),
        "keyframe-period": keyframeInterval,
      ]
    case .v4l2h264enc:
      let controls = Factory.v4l2Controls(
        bitsPerSecond: layer.encoding.maxBitrate, keyframeInterval: self.keyframeInterval)
      return ["extra-controls": .structure(controls)]
    case .nvh264enc:
      return [
        "preset": .enumeration("low-latency-hp"), "rc-mode": .enumeration("cbr"), "zerolatency": .bool(true),
        bitrate.property: .int(bitrate.value), "gop-size": keyframeInterval,
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
            "format": factory.isHardware ? "NV12" : "I420", "width": Int32(size.width), "height": Int32(size.height),
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
    case .vp8enc, .vavp8enc:
      chain.elements.append(ElementRecipe("rtpvp8pay", ["picture-id-mode": .enumeration("15-bit")]))
    case .x264enc, .vah264enc, .vaapih264enc, .v4l2h264enc, .nvh264enc:
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
  /// is left alone. The software three take a new bitrate while playing (vp8enc reconfigures
  /// libvpx at once, x264enc at its next frame); so do, by their documentation, the hardware
  /// ones (`v4l2h264enc` sets its controls on the device as soon as `extra-controls` changes).
  static func setBitrate(_ bitsPerSecond: Int, of encoder: GStreamer.Element) {
    guard let factory = encoder.factoryName.flatMap(Factory.init(rawValue:)) else { return }
    let bitrate = factory.bitrate(bitsPerSecond)
    do {
      if factory == .v4l2h264enc {
        var controls = try encoder.get("extra-controls", as: Structure?.self) ?? Structure(name: "controls")
        try controls.set(bitrate.property, Int32(clamping: bitrate.value))
        try encoder.set("extra-controls", controls)
      } else {
        try encoder.set(bitrate.property, bitrate.value)
      }
    } catch {
      RevueLog.log(.warning, "Publication", "cannot set the bitrate of \(encoder.name): \(error)")
    }
  }
}

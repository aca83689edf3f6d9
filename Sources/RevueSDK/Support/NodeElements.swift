import GStreamer

/// The GStreamer elements Revue's capture, publishing and receiving pipelines use, and whether
/// this machine has them: what `revue check` reports.
public enum NodeElements {
  /// One element the node uses.
  public struct Requirement: Sendable, Hashable {
    /// The element factory, such as `vp8enc`.
    public var factory: String
    /// What Revue uses it for.
    public var purpose: String
    /// Whether Revue cannot work without it (false: a feature is unavailable without it).
    public var isEssential: Bool
  }

  /// A requirement and what this machine has of it.
  public struct Status: Sendable, Hashable {
    /// The requirement.
    public var requirement: Requirement
    /// The plugin that provides the installed element; nil when the element is missing.
    public var plugin: String?
    /// Whether the element is installed.
    public var isInstalled: Bool
    /// The Debian package that provides it.
    public var package: String?
  }

  /// Every element the node's pipelines use.
  public static let requirements: [Requirement] = [
    .init(factory: "appsrc", purpose: "buffer capture and send pipelines", isEssential: true),
    .init(factory: "appsink", purpose: "capture pipelines and receivers", isEssential: true),
    .init(factory: "videotestsrc", purpose: "test pattern and virtual camera", isEssential: true),
    .init(factory: "audiotestsrc", purpose: "virtual microphone", isEssential: false),
    .init(factory: "videoconvert", purpose: "pixel format conversion", isEssential: true),
    .init(factory: "videoscale", purpose: "resolution changes", isEssential: true),
    .init(factory: "videoflip", purpose: "rotation and mirroring", isEssential: true),
    .init(factory: "videorate", purpose: "frame-rate changes", isEssential: true),
    .init(factory: "audioconvert", purpose: "audio sample formats", isEssential: true),
    .init(factory: "audioresample", purpose: "audio sample rates", isEssential: true),
    .init(factory: "jpegdec", purpose: "MJPEG cameras", isEssential: false),
    .init(factory: "jpegenc", purpose: "virtual MJPEG cameras", isEssential: false),
    .init(factory: "v4l2src", purpose: "Linux cameras", isEssential: false),
    .init(factory: "pulsesrc", purpose: "microphones (PulseAudio/PipeWire)", isEssential: false),
    .init(factory: "alsasrc", purpose: "microphones (ALSA)", isEssential: false),
    .init(factory: "webrtcdsp", purpose: "echo cancellation and noise suppression", isEssential: false),
    .init(factory: "vp8enc", purpose: "VP8 publishing", isEssential: true),
    .init(factory: "vp8dec", purpose: "VP8 receiving", isEssential: true),
    .init(factory: "x264enc", purpose: "H.264 publishing", isEssential: false),
    .init(factory: "openh264enc", purpose: "H.264 publishing (alternative)", isEssential: false),
    .init(factory: "avdec_h264", purpose: "H.264 receiving", isEssential: false),
    .init(factory: "h264parse", purpose: "H.264 streams", isEssential: false),
    .init(factory: "opusenc", purpose: "Opus publishing", isEssential: true),
    .init(factory: "opusdec", purpose: "Opus receiving", isEssential: true),
    .init(factory: "rtpbin", purpose: "RTP sessions with RTCP", isEssential: true),
    .init(factory: "rtpvp8pay", purpose: "VP8 over RTP", isEssential: true),
    .init(factory: "rtpvp8depay", purpose: "VP8 over RTP", isEssential: true),
    .init(factory: "rtph264pay", purpose: "H.264 over RTP", isEssential: false),
    .init(factory: "rtph264depay", purpose: "H.264 over RTP", isEssential: false),
    .init(factory: "rtpopuspay", purpose: "Opus over RTP", isEssential: true),
    .init(factory: "rtpopusdepay", purpose: "Opus over RTP", isEssential: true),
    .init(factory: "udpsrc", purpose: "receiving RTP/RTCP", isEssential: true),
    .init(factory: "udpsink", purpose: "sending RTP/RTCP", isEssential: true),
    .init(factory: "srtpenc", purpose: "SRTP publishing", isEssential: false),
    .init(factory: "srtpdec", purpose: "SRTP receiving", isEssential: false),
    .init(factory: "webrtcbin", purpose: "WebRTC publishing to a media server", isEssential: false),
    .init(factory: "mpegtsmux", purpose: "SRT output (MPEG-TS)", isEssential: false),
    .init(factory: "srtsink", purpose: "SRT output", isEssential: false),
    .init(factory: "flvmux", purpose: "RTMP output (FLV)", isEssential: false),
    .init(factory: "rtmp2sink", purpose: "RTMP output", isEssential: false),
    .init(factory: "avenc_aac", purpose: "AAC audio (RTSP, SRT, RTMP)", isEssential: false),
    .init(factory: "pngenc", purpose: "snapshots of received frames", isEssential: false),
  ]

  /// What this machine has of each requirement.
  public static func check() -> [Status] {
    requirements.map { requirement in
      let info = Gst.elementInfo(requirement.factory)
      return Status(
        requirement: requirement, plugin: info?.plugin, isInstalled: info != nil,
        package: PluginPackages.package(providing: requirement.factory))
    }
  }
}

extension NodeElements {
  /// A hardware video encoder Revue drives, as this machine has it.
  public struct HardwareEncoder: Sendable, Hashable {
    /// The element factory, such as `vah264enc`.
    public var factory: String
    /// What it encodes.
    public var codec: VideoCodec
    /// The plugin that provides it.
    public var plugin: String?
    /// The memory it takes frames in without a copy (its sink caps feature), such as
    /// `memory:VAMemory`; Revue hands it NV12 in system memory.
    public var zeroCopyMemory: String?
    /// Whether publications over RTP use it: it is the first of its codec found, and
    /// `REVUE_ENCODER=software` is not set.
    public var isUsed: Bool
  }

  /// Every hardware encoder Revue drives, in the order they are preferred, found or not.
  public static var hardwareEncoderFactories: [String] { VideoEncoder.Factory.hardware.map(\.rawValue) }

  /// The hardware encoders this machine has, in the order they are preferred.
  public static func hardwareEncoders() -> [HardwareEncoder] {
    VideoEncoder.Factory.installedHardware.map { factory in
      HardwareEncoder(
        factory: factory.rawValue, codec: factory.codec, plugin: Gst.elementInfo(factory.rawValue)?.plugin,
        zeroCopyMemory: factory.zeroCopyMemory, isUsed: VideoEncoder.Factory.preferred(for: factory.codec) == factory)
    }
  }
}

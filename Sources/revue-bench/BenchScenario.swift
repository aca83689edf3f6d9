import RevueSDK

/// A video stream the bench sends or receives: codec, size and source.
struct BenchStream: Sendable, Hashable {
  /// Where the frames sent come from.
  enum Source: String, Sendable {
    /// The virtual camera's raw NV12.
    case camera
    /// The virtual camera's MJPEG, decoded before encoding.
    case mjpegCamera = "mjpeg"
    /// One NV12 frame pushed through a `BufferCapturer` 30 times a second.
    case pushedNV12 = "nv12"
    /// One BGRA frame pushed through a `BufferCapturer` (converted to NV12) 30 times a second.
    case pushedBGRA = "bgra"

    /// The pushed frames' format, for the pushed sources.
    var pushedFormat: PixelFormat? {
      switch self {
      case .pushedNV12: .nv12
      case .pushedBGRA: .bgra
      case .camera, .mjpegCamera: nil
      }
    }
  }

  var codec: VideoCodec
  var width: Int
  var height: Int
  var source = Source.camera
  /// `vp8enc threads`, as the SDK sets them for this size on this machine.
  var encoderThreads: Int {
    LocalTrackPublication.vp8Threads(for: Dimensions(width: Int32(width), height: Int32(height)))
  }

  /// The bitrate both sides encode at: 3 Mbit/s at 1080p, 1.5 Mbit/s at 720p, 800 kbit/s at 480p.
  var bitrate: Int { width >= 1920 ? 3_000_000 : width >= 1280 ? 1_500_000 : 800_000 }

  /// Bytes of one I420 frame (no padding at these sizes).
  var i420Size: Int { width * height * 3 / 2 }

  /// The encoder and payloader with the properties `RTPSender` gives them (keyframes every 2 s).
  var encoder: String {
    switch codec {
    case .vp8:
      "vp8enc deadline=1 cpu-used=8 end-usage=cbr target-bitrate=\(bitrate) keyframe-max-dist=60 lag-in-frames=0"
        + " error-resilient=default threads=\(encoderThreads) ! rtpvp8pay picture-id-mode=15-bit"
    case .h264:
      "x264enc tune=zerolatency speed-preset=ultrafast bitrate=\(bitrate / 1000) key-int-max=60"
        + " ! video/x-h264,profile=constrained-baseline ! h264parse config-interval=-1"
        + " ! rtph264pay aggregate-mode=zero-latency"
    }
  }

  /// The raw formats the SDK's send pipeline hands the encoder as they come: `vp8enc` takes only
  /// I420, `x264enc` NV12 too.
  var encoderFormats: String { codec == .h264 ? "{NV12,I420}" : "I420" }

  /// The decoder chain of `RemoteVideoTrack`.
  var decoder: String {
    switch codec {
    case .vp8: "rtpvp8depay ! vp8dec automatic-request-sync-points=true"
    case .h264: "rtph264depay ! h264parse ! avdec_h264"
    }
  }

  /// The frames the Revue side sends, for `frames` frames: for a camera, what the virtual camera
  /// and the camera capturer do (`videotestsrc`, JPEG encoding and decoding for MJPEG, the
  /// capturer's `videoconvert`); for pushed frames, one SMPTE-bars frame repeated 30 times a
  /// second, converted to NV12 as `BufferCapturer` converts BGRA.
  func source(frames: Int) -> String {
    let size = "width=\(width),height=\(height),framerate=30/1"
    return switch source {
    case .camera:
      "videotestsrc is-live=true num-buffers=\(frames) ! video/x-raw,format=NV12,\(size) ! videoconvert"
        + " ! video/x-raw,format=NV12"
    case .mjpegCamera:
      "videotestsrc is-live=true num-buffers=\(frames) ! video/x-raw,format=I420,\(size) ! jpegenc"
        + " ! image/jpeg,\(size) ! jpegdec ! videoconvert ! video/x-raw,format=I420"
    case .pushedNV12: repeatedFrame(.nv12, frames: frames)
    case .pushedBGRA: "\(repeatedFrame(.bgra, frames: frames)) ! videoconvert ! video/x-raw,format=NV12"
    }
  }

  /// The test frame in `format` at the stream's size, repeated 30 times a second, `frames` times
  /// or until stopped. (`imagefreeze` takes its rate from downstream: 25 fps unless told.)
  func repeatedFrame(_ format: PixelFormat, frames: Int? = nil) -> String {
    "\(Self.testFrame(format: format, width: width, height: height)) ! imagefreeze is-live=true"
      + (frames.map { " num-buffers=\($0)" } ?? "") + " ! video/x-raw,framerate=30/1"
  }

  /// `videotestsrc` making the one SMPTE-bars frame that pushed sources repeat, on both sides.
  static func testFrame(format: PixelFormat, width: Int, height: Int) -> String {
    "videotestsrc num-buffers=1 pattern=smpte"
      + " ! video/x-raw,format=\(format.gstreamerName),width=\(width),height=\(height),framerate=30/1"
  }

  /// `RTPSender`'s pipeline from its queue to the sockets: RTP to `port`, RTCP to `port + 1`,
  /// RTCP in on a socket of its own.
  func sendTail(port: Int, name: String = "rtpbin") -> String {
    "queue max-size-buffers=2 leaky=downstream ! videoconvert ! video/x-raw,format=\(encoderFormats)"
      + " ! \(encoder) pt=96 mtu=1200"
      + " ! \(name).send_rtp_sink_0 rtpbin name=\(name) rtp-profile=avpf"
      + " \(name).send_rtp_src_0 ! udpsink host=127.0.0.1 port=\(port) sync=false async=false"
      + " \(name).send_rtcp_src_0 ! udpsink host=127.0.0.1 port=\(port + 1) sync=false async=false"
      + " udpsrc port=0 address=127.0.0.1 ! \(name).recv_rtcp_sink_0"
  }

  /// `RTPReceiver`'s pipeline on `port` (RTCP on `port + 1`), decoded to I420 into `sink`.
  func receive(port: Int, sink: String) -> String {
    "udpsrc address=127.0.0.1 port=\(port) reuse=false"
      + " caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=\(codec == .vp8 ? "VP8" : "H264"),payload=96"
      + " ! session.recv_rtp_sink rtpsession name=session rtp-profile=avpf session.recv_rtp_src"
      + " ! rtpjitterbuffer latency=50 ! \(decoder) ! videoconvert ! video/x-raw,format=I420 ! \(sink)"
      + " udpsrc address=127.0.0.1 port=\(port + 1) reuse=false ! session.recv_rtcp_sink"
      + " session.send_rtcp_src ! udpsink host=127.0.0.1 port=9 sync=false async=false"
  }

  /// The stream as `KEY=VALUE` parameters of a bench child.
  var parameters: [String: String] {
    ["codec": codec.rawValue, "width": "\(width)", "height": "\(height)", "source": source.rawValue]
  }

  /// The stream the parameters of a bench child describe.
  init(parameters: [String: String]) throws {
    guard let codec = parameters["codec"].flatMap(VideoCodec.init(rawValue:)),
      let width = parameters["width"].flatMap(Int.init), let height = parameters["height"].flatMap(Int.init)
    else { throw RevueError(.invalidInput, "bench child: no stream in \(parameters)") }
    guard let source = BenchStream.Source(rawValue: parameters["source"] ?? "camera") else {
      throw RevueError(.invalidInput, "bench child: no source '\(parameters["source"] ?? "")'")
    }
    self.init(codec: codec, width: width, height: height, source: source)
  }

  /// A stream.
  init(codec: VideoCodec, width: Int, height: Int, source: Source = .camera) {
    (self.codec, self.width, self.height, self.source) = (codec, width, height, source)
  }

  /// How the report names it: `720p VP8`, `720p H.264 from MJPEG`, `1080p H.264 from pushed BGRA`.
  var title: String {
    let from =
      switch source {
      case .camera: ""
      case .mjpegCamera: " from MJPEG"
      case .pushedNV12: " from pushed NV12"
      case .pushedBGRA: " from pushed BGRA"
      }
    return "\(height)p \(codec == .vp8 ? "VP8" : "H.264")\(from)"
  }
}

/// The scenarios of `revue-bench`.
extension BenchCommand {
  /// What a scenario measures.
  enum Kind: Sendable, Hashable {
    /// 1920×1080 frames through `BufferCapturer` to a renderer.
    case capture(PixelFormat, VideoRotation)
    /// A camera, or frames pushed through `BufferCapturer`, published over RTP to loopback.
    case send(BenchStream)
    /// A stream received and decoded.
    case receive(BenchStream)
    /// From a frame entering the capturer to it leaving the receiver's decoder.
    case latency(BenchStream)
    /// From `publish` and `setCamera(enabled: true)` to the first packet and the first decoded frame.
    case startup(BenchStream)
    /// How many senders keep their full frame rate.
    case scale(BenchStream)
    /// A sender and a receiver left running: memory, threads and file descriptors after a warm-up.
    case soak(BenchStream)
    /// A serving node's memory, threads and descriptors over many short sessions (``Sessions``).
    case sessions
    /// Loss and outages through an emulated link, judged frame by frame (``Links``): a report of
    /// its own, not an A/B table.
    case links
    /// One pushed 1920×1080 I420 frame shown 30 times a second in an X11 window: a `VideoView`,
    /// and `videoconvert ! ximagesink`.
    case render
  }

  /// One measured scenario.
  enum Scenario: String, CaseIterable, Sendable {
    case captureNV12 = "capture-nv12"
    case captureBGRA = "capture-bgra"
    case captureRotate90 = "capture-rotate90"
    case publishNV12 = "publish-nv12"
    case publishBGRA = "publish-bgra"
    case sendVP8 = "send-vp8-720p"
    case sendH264 = "send-h264-720p"
    case sendVP8Small = "send-vp8-480p"
    case sendH264Small = "send-h264-480p"
    case sendVP8MJPEG = "send-vp8-720p-mjpeg"
    case sendH264MJPEG = "send-h264-720p-mjpeg"
    case receiveVP8 = "receive-vp8-720p"
    case receiveH264 = "receive-h264-720p"
    case receiveVP8Small = "receive-vp8-480p"
    case receiveH264Small = "receive-h264-480p"
    case latencyVP8 = "latency-vp8-720p"
    case latencyH264 = "latency-h264-720p"
    case startupVP8 = "startup-vp8-720p"
    case startupH264 = "startup-h264-720p"
    case scaleVP8 = "scale-vp8-480p"
    case render = "render-1080p"
    case soak
    case sessions
    case links

    /// What the scenario measures, on which stream.
    var kind: Kind {
      let hd = { (codec: VideoCodec) in BenchStream(codec: codec, width: 1280, height: 720) }
      let sd = { (codec: VideoCodec) in BenchStream(codec: codec, width: 640, height: 480) }
      return switch self {
      case .captureNV12: .capture(.nv12, ._0)
      case .captureBGRA: .capture(.bgra, ._0)
      case .captureRotate90: .capture(.nv12, ._90)
      case .sendVP8: .send(hd(.vp8))
      case .sendH264: .send(hd(.h264))
      case .sendVP8Small: .send(sd(.vp8))
      case .sendH264Small: .send(sd(.h264))
      case .sendVP8MJPEG: .send(BenchStream(codec: .vp8, width: 1280, height: 720, source: .mjpegCamera))
      case .sendH264MJPEG: .send(BenchStream(codec: .h264, width: 1280, height: 720, source: .mjpegCamera))
      case .publishNV12: .send(BenchStream(codec: .h264, width: 1920, height: 1080, source: .pushedNV12))
      case .publishBGRA: .send(BenchStream(codec: .h264, width: 1920, height: 1080, source: .pushedBGRA))
      case .receiveVP8: .receive(hd(.vp8))
      case .receiveH264: .receive(hd(.h264))
      case .receiveVP8Small: .receive(sd(.vp8))
      case .receiveH264Small: .receive(sd(.h264))
      case .latencyVP8: .latency(hd(.vp8))
      case .latencyH264: .latency(hd(.h264))
      case .startupVP8: .startup(hd(.vp8))
      case .startupH264: .startup(hd(.h264))
      case .scaleVP8: .scale(sd(.vp8))
      case .render: .render
      case .soak: .soak(hd(.vp8))
      case .sessions: .sessions
      case .links: .links
      }
    }

    /// How the report names it.
    var title: String {
      switch kind {
      case .capture(let format, let rotation):
        "capture 1080p \(format == .bgra ? "BGRA → NV12" : "NV12")\(rotation == ._90 ? " turned 90°" : "") → renderer"
      case .send(let stream): "send \(stream.title) → RTP"
      case .receive(let stream): "receive \(stream.title)"
      case .latency(let stream): "glass-to-glass \(stream.title)"
      case .startup(let stream): "start-up \(stream.title)"
      case .scale(let stream): "\(stream.title) senders at 30 fps"
      case .soak(let stream): "soak \(stream.title)"
      case .sessions: "serve 640x480 H.264, clients one after another:"
      case .links: "loss and outages through an emulated link"
      case .render: "show 1080p I420 in an X11 window"
      }
    }

    /// The scenarios a bench without names runs: all but the soak, which takes 10 minutes, the
    /// sessions, which take 10 too, and the links, which take 8 and make a report of their own.
    static let standard = allCases.filter { ![.soak, .sessions, .links].contains($0) }
  }
}

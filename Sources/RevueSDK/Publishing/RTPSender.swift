import GStreamer
import Synchronization

/// The send pipeline of one publication:
/// `appsrc ! queue ! encoder chain ! payloader ! rtpbin ! udpsink` with RTCP both ways: sender
/// reports go out from the socket that receives the receiver reports (symmetric RTCP), and no
/// receiving port of the destination is ever bound here.
final class RTPSender: Sendable {
  /// What the sender has done so far.
  struct Counters: Sendable, Hashable {
    var framesEncoded = 0
    var keyframes = 0
    var packetsSent = 0
    var bytesSent = 0
    /// The latest receiver report on this stream, if one came.
    var report: RTCPReportBlock?
    /// The round-trip time that report gave.
    var roundTrip: Duration?
  }

  /// What is sent, for messages: `vp8`, `h264`, `opus`.
  let name: String
  let ssrc: UInt32
  let payloadType: Int
  /// The local port RTCP is sent from and received on.
  let rtcpPort: Int
  private let pipeline: Pipeline
  private let source: AppSrc
  private let counters = Locked(Counters())

  /// A sender of video frames encoded with `codec`.
  convenience init(codec: VideoCodec, encoding: VideoEncoding, host: String, port: Int) throws(RevueError) {
    let keyframeInterval = max(1, encoding.maxFps * 2)
    let chain: String
    switch codec {
    case .vp8:
      chain =
        "vp8enc name=encoder deadline=1 cpu-used=8 end-usage=cbr target-bitrate=\(encoding.maxBitrate)"
        + " keyframe-max-dist=\(keyframeInterval) lag-in-frames=0 error-resilient=default threads=2"
        + " ! rtpvp8pay name=payloader picture-id-mode=15-bit"
    case .h264:
      chain =
        (Gst.hasElement("x264enc")
          ? "x264enc name=encoder tune=zerolatency speed-preset=ultrafast bitrate=\(encoding.maxBitrate / 1000)"
            + " key-int-max=\(keyframeInterval) ! video/x-h264,profile=constrained-baseline"
          : "openh264enc name=encoder complexity=low bitrate=\(encoding.maxBitrate) gop-size=\(keyframeInterval)")
        + " ! h264parse ! rtph264pay name=payloader config-interval=-1 aggregate-mode=zero-latency"
    }
    try self.init(
      name: codec.rawValue, chain: "videoconvert ! video/x-raw,format=I420 ! \(chain)", payloadType: 96, host: host,
      port: port)
  }

  /// Builds and starts the pipeline, sending to `host`: RTP to `port`, RTCP to `port + 1`.
  /// - Parameter chain: from the raw media to the payloader; the encoder is named `encoder`.
  /// - Throws: ``RevueError`` naming the missing element or the socket that could not be opened.
  init(name: String, chain: String, payloadType: Int, host: String, port: Int) throws(RevueError) {
    self.name = name
    self.payloadType = payloadType
    ssrc = UInt32.random(in: 1..<UInt32.max)
    let description = """
      appsrc name=source is-live=true format=time do-timestamp=true min-latency=0 \
      ! queue max-size-buffers=2 leaky=downstream ! \(chain) pt=\(payloadType) ssrc=\(ssrc) mtu=1200 \
      ! rtpbin.send_rtp_sink_0 \
      rtpbin name=rtpbin rtp-profile=avpf \
      rtpbin.send_rtp_src_0 ! udpsink name=rtpout host=\(host) port=\(port) sync=false async=false \
      rtpbin.send_rtcp_src_0 ! udpsink name=rtcpout host=\(host) port=\(port + 1) sync=false async=false \
      udpsrc name=rtcpin port=0 address=0.0.0.0 ! rtpbin.recv_rtcp_sink_0
      """
    do {
      pipeline = try Pipeline(parsing: description)
      source = try pipeline.element(named: "source", as: AppSrc.self)
      try pipeline.element(named: "rtpbin", as: Element.self).set(
        "sdes", try Structure(name: "application/x-rtp-source-sdes", ["cname": LocalTrackPublication.cname]))
      // RTCP in and out on one socket: bind it first, then share it.
      let rtcpIn = try pipeline.element(named: "rtcpin", as: Element.self)
      try rtcpIn.setState(.ready)
      try rtcpIn.shareSocket(with: try pipeline.element(named: "rtcpout", as: Element.self))
      rtcpPort = (try? rtcpIn.get("port", as: Int.self)) ?? 0
    } catch {
      throw RevueError(.gstreamer, "cannot build the \(name) sender", underlying: error)
    }
    let counters = self.counters
    pipeline.element(named: "encoder")?.staticPad("src")?.addProbe(.buffer) { _, info in
      let isKey = info.buffer.map { !$0.flags.contains(.deltaUnit) } ?? false
      counters.value.withLock { counters in
        counters.framesEncoded += 1
        if isKey { counters.keyframes += 1 }
      }
      return .ok
    }
    pipeline.element(named: "rtpout")?.staticPad("sink")?.addProbe([.buffer, .bufferList]) { _, info in
      let sizes = info.listSizes ?? [info.buffer?.size ?? 0]
      counters.value.withLock { counters in
        counters.packetsSent += sizes.count
        counters.bytesSent += sizes.reduce(0, +)
      }
      return .ok
    }
    let ssrc = self.ssrc
    pipeline.element(named: "rtcpin")?.staticPad("src")?.addProbe(.buffer) { _, info in
      let arrival = RTCPReportBlock.ntpMiddleNow()
      guard let block = info.buffer?.rtcpReportBlocks.last(where: { $0.ssrc == ssrc }) else { return .ok }
      counters.value.withLock { counters in
        counters.report = block
        counters.roundTrip = block.roundTrip(arrival: arrival) ?? counters.roundTrip
      }
      return .ok
    }
    do {
      try pipeline.play()
    } catch {
      pipeline.stop()
      throw RevueError(.gstreamer, "the \(name) sender to \(host):\(port) cannot start", underlying: error)
    }
  }

  deinit { pipeline.stop() }

  /// The counters now.
  var statistics: Counters { counters.value.withLock { $0 } }

  /// Sends a buffer of media (shared, not copied); drops it, logged, when the pipeline refuses.
  func send(_ buffer: Buffer, caps: Caps) {
    do {
      try source.push(sample: Sample(buffer: buffer, caps: caps))
    } catch {
      RevueLog.log(.debug, "Publication", "buffer dropped: the \(name) sender refused it (\(error))")
    }
  }

  /// Stops sending.
  func stop() { pipeline.stop() }
}

/// A value behind a lock, shareable by reference (for closures that outlive the owner's borrow).
final class Locked<Value: Sendable>: Sendable {
  let value: Mutex<Value>
  init(_ value: Value) { self.value = Mutex(value) }
}

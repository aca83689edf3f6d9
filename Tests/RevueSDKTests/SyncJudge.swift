import Foundation
import GStreamer
import RevueTestSupport
import Synchronization
import Testing

/// The lip-sync judge no one on the team wrote the parts of: GStreamer's `rtpbin` (or `rtspsrc`,
/// which holds one) receives a video and an audio stream, lines them up by the sender's RTCP reports, and the streams are
/// depayloaded and muxed into Matroska without decoding; the file is then decoded and the
/// sync signal's onsets found in it (flashes: a frame whose mean luma jumps above 200; beeps:
/// the first loud sample after 200 ms of quiet).
struct SyncJudge {
  /// A recording under way.
  final class Recording: Sendable {
    let file: URL
    private let pipeline: Pipeline

    init(videoPort: Int, audioPort: Int, file: URL) throws {
      self.file = file
      let video = "application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96"
      let audio = "application/x-rtp,media=audio,clock-rate=48000,encoding-name=OPUS,payload=111"
      pipeline = try Pipeline(
        parsing: """
          rtpbin name=r latency=200 \
          udpsrc address=127.0.0.1 port=\(videoPort) caps="\(video)" ! r.recv_rtp_sink_0 \
          udpsrc address=127.0.0.1 port=\(videoPort + 1) ! r.recv_rtcp_sink_0 \
          udpsrc address=127.0.0.1 port=\(audioPort) caps="\(audio)" ! r.recv_rtp_sink_1 \
          udpsrc address=127.0.0.1 port=\(audioPort + 1) ! r.recv_rtcp_sink_1 \
          r. ! rtpvp8depay ! queue ! mux. \
          r. ! rtpopusdepay ! opusparse ! queue ! mux. \
          matroskamux name=mux ! filesink location="\(file.path)"
          """)
      try pipeline.play()
    }

    /// A recording of what GStreamer's `rtspsrc` plays from `url` (a VP8 and an Opus stream),
    /// over UDP on the ports from `port` (four). `rtspsrc` lines the streams up by the server's
    /// RTCP sender reports, as `rtpbin` does for plain RTP.
    init(rtsp url: String, port: Int, file: URL) throws {
      self.file = file
      // Each depayloader takes the one stream whose caps it accepts, whichever pad comes first.
      pipeline = try Pipeline(
        parsing: """
          rtspsrc name=s location="\(url)" latency=200 protocols=udp port-range=\(port)-\(port + 3) \
          s. ! rtpvp8depay ! queue ! mux. \
          s. ! rtpopusdepay ! opusparse ! queue ! mux. \
          matroskamux name=mux ! filesink location="\(file.path)"
          """)
      try pipeline.play()
    }

    /// Ends the file (end of stream through the muxer) and stops.
    func finish() async throws {
      let done = pipeline.bus.messages([.eos, .error])
      _ = pipeline.sendEndOfStream()
      defer { pipeline.stop() }
      try await withDeadline(10, "the recording's end of stream") {
        for await message in done {
          if case .error(let error) = message.kind { throw GStreamerError.bus(error) }
          return
        }
      }
    }
  }

  /// The onsets found in a recording, in seconds of its timeline.
  struct Onsets {
    var flashes: [Double]
    var beeps: [Double]

    /// Each flash's beep (the nearest) minus the flash, in milliseconds, for the flashes at or
    /// after `from` seconds that have a beep within half a second.
    func skews(from: Double = 0) -> [Double] {
      flashes.filter { $0 >= from }.compactMap { flash in
        beeps.min { abs($0 - flash) < abs($1 - flash) }.flatMap { abs($0 - flash) < 0.5 ? ($0 - flash) * 1000 : nil }
      }
    }
  }

  /// Decodes `file` and finds the flashes and beeps.
  static func onsets(in file: URL) async throws -> Onsets {
    let pipeline = try Pipeline(
      parsing: """
        filesrc location="\(file.path)" ! matroskademux name=d \
        d. ! queue ! vp8dec ! videoconvert ! videoscale ! video/x-raw,format=GRAY8,width=16,height=16 \
        ! appsink name=video sync=false \
        d. ! queue ! opusdec ! audioconvert ! audio/x-raw,format=S16LE,channels=1,rate=48000 \
        ! appsink name=audio sync=false
        """)
    let found = Mutex(Onsets(flashes: [], beeps: []))
    let bright = Mutex(false)
    try pipeline.element(named: "video", as: AppSink.self).setCallbacks(newSample: { sample in
      guard let buffer = sample.buffer, let pts = buffer.pts,
        let luma = try? buffer.withUnsafeBytes({ $0.reduce(0) { $0 + Int($1) } / max(1, $0.count) })
      else { return }
      let isBright = luma > 200
      let wasBright = bright.withLock { previous in
        defer { previous = isBright }
        return previous
      }
      if isBright && !wasBright { found.withLock { $0.flashes.append(pts.seconds) } }
    })
    let quietSince = Mutex<Double?>(0)
    try pipeline.element(named: "audio", as: AppSink.self).setCallbacks(newSample: { sample in
      guard let buffer = sample.buffer, let pts = buffer.pts,
        let samples = try? buffer.withUnsafeBytes({ Array($0.bindMemory(to: Int16.self)) })
      else { return }
      for (index, value) in samples.enumerated() {
        let time = pts.seconds + Double(index) / 48_000
        quietSince.withLock { since in
          if abs(Int(value)) > Int(Int16.max) / 10 {
            if let start = since, time - start >= 0.2 { found.withLock { $0.beeps.append(time) } }
            since = nil
          } else if since == nil {
            since = time
          }
        }
      }
    })
    try await pipeline.playUntilEndOfStream(timeout: .seconds(30))
    return found.withLock { $0 }
  }
}

import Foundation
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Testing

/// Issue 16's Janus streaming: a room streams RTP into a mountpoint of Debian's Janus, and
/// WebRTC viewers (``JanusViewer``: Janus's HTTP API, `webrtcbin`) decode it, several at once;
/// the keyframes Janus asks for as viewers come reach the encoder through RTCP. The mountpoints
/// are those of docs/janus.plugin.streaming.jcfg, on ports of the test's own.
@Suite(.tier(.interop), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct JanusStreamingTests {
  init() { TestEnvironment.prepare() }

  /// docs/janus.plugin.streaming.jcfg with the RTP ports 5004 (VP8) and 5006 (H.264) moved to
  /// `port` and `port + 2` (RTCP beside each).
  static func documentedMountpoints(port: Int) throws -> String {
    let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
      "../../docs/janus.plugin.streaming.jcfg")
    var text = try String(contentsOf: file, encoding: .utf8)
    for (documented, moved) in [(5004, port), (5005, port + 1), (5006, port + 2), (5007, port + 3)] {
      text = text.replacingOccurrences(of: "port = \(documented)\n", with: "port = \(moved)\n")
    }
    return text
  }

  @Test(arguments: [VideoCodec.vp8, .h264]) func severalViewersDecodeARoomStreamedIntoAMountpoint(_ codec: VideoCodec)
    async throws
  {
    let port = FreePorts.rtp(pairs: 2)
    let janus = try await Janus.start(configurations: ["streaming": try Self.documentedMountpoints(port: port)])
    let (mountpoint, mountpointPort) = codec == .vp8 ? (1, port) : (2, port + 2)
    do {
      try await TestCameras.with(["usb-1080p-webcam"]) { devices in
        let (room, participant, capturer) = try await TestCameras.sendingRoom(
          to: mountpointPort, camera: devices[0], dimensions: .h480_43)
        let publication = try await participant.publish(
          videoTrack: participant.cameraTrack, options: VideoPublishOptions(preferredCodec: codec))
        try await capturer.startCapture()
        var viewers: [JanusViewer] = []
        for _ in 0..<3 { viewers.append(try await JanusViewer(janus, mountpoint: mountpoint)) }
        for viewer in viewers { try await viewer.waitForFrames(30, within: 20) }
        // Janus asks the source for a keyframe as each viewer starts (RTCP PLI), to where the
        // sender's reports come from, once one came (the first viewers may be quicker): one
        // more viewer's request reaches the publication, and its first picture follows.
        let requested = publication.statistics.keyframeRequests
        viewers.append(try await JanusViewer(janus, mountpoint: mountpoint))
        try await viewers[3].waitForFrames(30, within: 20)
        #expect(publication.statistics.keyframeRequests > requested, "\(publication.statistics)")
        print("Janus, \(codec): viewers decoded \(viewers.map(\.framesDecoded)) frames; \(publication.statistics)")
        for viewer in viewers { await viewer.stop() }
        try await capturer.stopCapture()
        await room.disconnect()
      }
    } catch {
      let exit = await janus.stop()
      Issue.record("Janus said:\n\(exit.output.suffix(3000))")
      throw error
    }
    await janus.stop()
  }
}

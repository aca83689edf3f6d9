import Foundation
import GStreamer
import RevueTestSupport
import Synchronization
import Testing

extension GStreamerSuite {
  /// `WebRTCBin` alone: two peers in one pipeline negotiate (offer, answer, candidates) and the
  /// answerer decodes what the offerer sends; bad descriptions are refused with webrtcbin's reason.
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct WebRTCBinTests {
    init() { TestEnvironment.prepare() }

    @Test func twoPeersNegotiateAndVideoFlows() async throws {
      let pipeline = Pipeline()
      let offerer = try WebRTCBin(name: "offerer")
      let answerer = try WebRTCBin(name: "answerer")
      let source = try Bin(
        parsing:
          "videotestsrc is-live=true ! video/x-raw,width=160,height=120,framerate=30/1 ! vp8enc deadline=1 ! rtpvp8pay ! capsfilter caps=application/x-rtp,media=video,encoding-name=VP8,payload=96"
      )
      try pipeline.add(source, offerer.element, answerer.element)
      _ = try source.link(offerer.element)
      let decoded = Mutex(0)
      let (frames, framed) = AsyncStream.makeStream(of: Void.self)
      // Weakly, here and below: webrtcbin holds its handlers, and the pipeline holds webrtcbin.
      answerer.element.onPadAdded { [weak pipeline] pad in
        guard let pipeline, let sink = try? Bin(parsing: "rtpvp8depay ! vp8dec ! fakesink name=sink sync=false"),
          (try? pipeline.add(sink)) != nil, let input = sink.staticPad("sink")
        else { return }
        sink.element(named: "sink")?.staticPad("sink")?.addProbe(.buffer) { _, _ in
          decoded.withLock { $0 += 1 }
          framed.yield()
          return .ok
        }
        sink.syncStateWithParent()
        try? pad.link(input)
      }
      offerer.onICECandidate { [weak answerer] line, candidate in
        answerer?.addICECandidate(mLineIndex: line, candidate: candidate)
      }
      answerer.onICECandidate { [weak offerer] line, candidate in
        offerer?.addICECandidate(mLineIndex: line, candidate: candidate)
      }
      try pipeline.play()

      let offer = try await offerer.createOffer()
      #expect(offer.contains("m=video") && offer.contains("VP8/90000"))
      try await offerer.setLocalDescription(.offer, sdp: offer)
      try await answerer.setRemoteDescription(.offer, sdp: offer)
      let answer = try await answerer.createAnswer()
      try await answerer.setLocalDescription(.answer, sdp: answer)
      try await offerer.setRemoteDescription(.answer, sdp: answer)
      #expect(offerer.localDescription?.contains("a=fingerprint") == true)

      let got: [Void] = try await collect(10, of: frames, within: 20, "10 frames through two webrtcbins")
      #expect(got.count == 10)
      #expect(offerer.connectionState == "connected" || offerer.connectionState == "connecting")
      pipeline.stop()
    }

    /// A peer that only receives has no sink pad to make its offer from: a receive-only
    /// transceiver gives it a media line per codec of its caps, with the NACK its `do-nack` asks.
    @Test func aReceiveOnlyTransceiverMakesARecvonlyOffer() async throws {
      let pipeline = Pipeline()
      let peer = try WebRTCBin()
      try pipeline.add(peer.element)
      let caps = try Caps(
        "application/x-rtp,media=video,encoding-name=VP8,payload=96,clock-rate=90000,rtcp-fb-nack-pli=true;"
          + "application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000")
      let transceiver = try peer.addTransceiver(.receiveOnly, caps: caps)
      #expect(transceiver.typeName == "GstWebRTCRTPTransceiver" || transceiver.typeName.hasSuffix("Transceiver"))
      try transceiver.set("do-nack", true)
      try pipeline.play()
      defer { pipeline.stop() }
      let offer = try await peer.createOffer()
      #expect(offer.contains("a=recvonly") && offer.contains("m=video 9 UDP/TLS/RTP/SAVPF 96 102"), "\(offer)")
      #expect(offer.contains("a=rtpmap:96 VP8/90000") && offer.contains("a=rtpmap:102 H264/90000"), "\(offer)")
      #expect(offer.contains("a=rtcp-fb:96 nack pli") && offer.contains("rtx/90000"), "\(offer)")
    }

    @Test func badDescriptionsAreRefusedWithAReason() async throws {
      let pipeline = Pipeline()
      let peer = try WebRTCBin()
      try pipeline.add(peer.element)
      try pipeline.play()
      defer { pipeline.stop() }
      await #expect(throws: GStreamerError.self) { try await peer.setRemoteDescription(.offer, sdp: "not an SDP") }
      // An answer before any offer does not fit the negotiation.
      let answer =
        "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n"
      do {
        try await peer.setRemoteDescription(.answer, sdp: answer)
        Issue.record("an answer with no offer was taken")
      } catch {
        #expect("\(error)".contains("set-remote-description"), "\(error)")
      }
      // An answer with no offer to answer.
      await #expect(throws: GStreamerError.self) { _ = try await peer.createAnswer() }
      #expect(peer.localDescription == nil)
    }
  }
}

import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  @Suite(.tier(.pipeline), .timeLimit(.minutes(1))) struct RTPHeaderExtensionTests {
    init() { TestEnvironment.prepare() }

    /// A payloader given the RTP stream id extension writes it into each packet (RFC 8285's
    /// one-byte form) and announces it in its caps; the returned element's properties hold.
    @Test func aPayloaderWritesTheExtensionAndAnnouncesIt() async throws {
      let uri = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"
      let pipeline = try Pipeline(
        parsing: "videotestsrc num-buffers=1 ! video/x-raw,width=64,height=48 ! vp8enc deadline=1"
          + " ! rtpvp8pay name=pay ! appsink name=sink sync=false")
      let payloader = try #require(pipeline.element(named: "pay"))
      let streamID = try payloader.addRTPHeaderExtension(uri: uri, id: 3, properties: ["rid": .string("f")])
      #expect(try streamID.get("rid", as: String.self) == "f")
      let samples = try pipeline.element(named: "sink", as: AppSink.self).samples()
      try pipeline.play()
      let first: Sample? = try await withDeadline(20, "a packet") {
        for await sample in samples { return sample }
        return nil
      }
      pipeline.stop()
      let sample = try #require(first)
      #expect(sample.caps?.structure(at: 0).get("extmap-3", as: String.self) == uri)
      let bytes = try #require(sample.buffer?.bytes)
      // The extension bit, then after the 12-byte header: 0xBEDE, its length, id 3 with one
      // byte ('f').
      #expect(bytes[0] & 0x10 != 0)
      #expect(Array(bytes[12..<14]) == [0xBE, 0xDE] && bytes[16] == 0x30 && bytes[17] == UInt8(ascii: "f"))
    }

    /// The absolute send time goes into every packet, lists (a payloader's keyframe) included,
    /// as one-byte extension `id` with 3 bytes: 6.18 fixed-point seconds, rising.
    @Test func theAbsoluteSendTimeIsWrittenIntoEveryPacket() async throws {
      let pipeline = try Pipeline(
        parsing: "videotestsrc num-buffers=20 pattern=snow ! video/x-raw,width=320,height=240 ! vp8enc deadline=1"
          + " ! rtpvp8pay name=pay mtu=400 ! appsink name=sink sync=false")
      let payloader = try #require(pipeline.element(named: "pay"))
      #expect(payloader.staticPad("src")?.writeAbsoluteSendTime(id: 5) != nil)
      let samples = try pipeline.element(named: "sink", as: AppSink.self).samples()
      try pipeline.play()
      let packets: [[UInt8]] = try await withDeadline(20, "the packets") {
        var packets: [[UInt8]] = []
        for await sample in samples {
          if let bytes = sample.buffer?.bytes { packets.append(bytes) }
          if packets.count >= 40 { break }
        }
        return packets
      }
      pipeline.stop()
      #expect(packets.count == 40)
      var previous = -1
      for bytes in packets {
        // The extension bit, 0xBEDE, and id 5 with 3 bytes (length field 2).
        #expect(bytes[0] & 0x10 != 0 && Array(bytes[12..<14]) == [0xBE, 0xDE] && bytes[16] == 0x52)
        let time = Int(bytes[17]) << 16 | Int(bytes[18]) << 8 | Int(bytes[19])
        #expect(time >= previous || previous - time > 1 << 23, "wrapped only at 64 s")
        previous = time
      }
    }

    /// A REMB message alone (reduced-size RTCP, as aiortc sends it): 1.5 Mb/s for one SSRC;
    /// a cut one and a receiver report hold none.
    @Test func aReceiverEstimateIsRead() {
      // PSFB (206), FMT 15, length 5 words: sender SSRC, media SSRC 0, "REMB", 1 SSRC,
      // exponent 3 and mantissa 187500 (1,500,000 = 187500 << 3), the SSRC.
      let mantissa = 187_500
      let remb: [UInt8] =
        [0x8F, 206, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0] + Array("REMB".utf8)
        + [1, UInt8(3 << 2 | mantissa >> 16), UInt8(mantissa >> 8 & 0xFF), UInt8(mantissa & 0xFF)]
        + [0x12, 0x34, 0x56, 0x78]
      let estimate = Buffer(copying: remb).rtcpReceiverEstimate
      #expect(estimate?.bitsPerSecond == 1_500_000 && estimate?.ssrcs == [0x1234_5678])
      var cut = remb
      cut[3] = 4
      #expect(Buffer(copying: Array(cut.prefix(20))).rtcpReceiverEstimate == nil)
      // A receiver report with no blocks: valid RTCP, no estimate.
      #expect(Buffer(copying: [0x80, 201, 0, 1, 0, 0, 0, 1]).rtcpReceiverEstimate == nil)
    }

    @Test func anElementThatIsNoPayloaderOrAnUnknownURIIsRefused() throws {
      let identity = try Element.make("identity")
      #expect(throws: GStreamerError.self) {
        try identity.addRTPHeaderExtension(uri: "urn:ietf:params:rtp-hdrext:sdes:mid", id: 1)
      }
      let payloader = try Element.make("rtpvp8pay")
      do {
        try payloader.addRTPHeaderExtension(uri: "urn:example:no-such-extension", id: 1)
        Issue.record("an unknown extension was added")
      } catch {
        #expect("\(error)".contains("urn:example:no-such-extension"), "\(error)")
      }
    }
  }
}

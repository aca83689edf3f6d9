import GStreamer
import RevueTestSupport
import Testing

extension GStreamerSuite {
  @Suite(.timeLimit(.minutes(1))) struct RTPHeaderExtensionTests {
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

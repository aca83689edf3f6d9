import Testing

@testable import RevueSDK

/// The simulcast lines a WHIP offer gets and what is read from the answer (RFC 8851, 8853).
@Suite(.tier(.unit)) struct SimulcastSDPTests {
  /// An offer as `webrtcbin` 1.22 makes it: VP8 (with an SSRC, as from caps that carry one), then Opus.
  static let offer = [
    "v=0", "o=- 7 0 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=group:BUNDLE video0 audio1",
    "m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 0.0.0.0", "a=mid:video0", "a=sendonly",
    "a=rtpmap:96 VP8/90000", "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli",
    "a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id", "a=ssrc:11 msid:x y", "a=ssrc:11 cname:x",
    "a=candidate:1 1 UDP 2015363327 127.0.0.1 40000 typ host",
    "m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:audio1", "a=rtpmap:111 OPUS/48000/2", "a=ssrc:13 cname:x",
  ].map { $0 + "\r\n" }.joined()

  @Test func theOfferNamesEachLayerAndOnlyTheFullSizesSSRCs() {
    let offer = SimulcastSDP.offer(Self.offer, rids: ["f", "h", "q"], fullSize: (21, 22, "me"))
    let lines = offer.components(separatedBy: "\r\n")
    #expect(offer.hasSuffix("\r\n") && !offer.contains("\r\n\r\n") && !offer.replacing("\r\n", with: "").contains("\n"))
    let video = Array(
      lines[lines.firstIndex(of: "m=video 9 UDP/TLS/RTP/SAVPF 96")!...].prefix { !$0.hasPrefix("m=audio") })
    #expect(
      video == [
        "m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 0.0.0.0", "a=mid:video0", "a=sendonly", "a=rtpmap:96 VP8/90000",
        "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli", "a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
        "a=candidate:1 1 UDP 2015363327 127.0.0.1 40000 typ host", "a=ssrc-group:FID 21 22", "a=ssrc:21 cname:me",
        "a=ssrc:22 cname:me", "a=rid:f send", "a=rid:h send", "a=rid:q send", "a=simulcast:send f;h;q",
      ])
    // The session part and the audio are left as they were.
    #expect(offer.hasPrefix("v=0\r\no=- 7 0 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE video0 audio1\r\nm=video"))
    #expect(
      offer.hasSuffix(
        "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:audio1\r\na=rtpmap:111 OPUS/48000/2\r\na=ssrc:13 cname:x\r\n"))
    #expect(SimulcastSDP.firstVideoMID(in: offer) == "video0")
  }

  /// The retransmissions' SSRC of a stream, as `webrtcbin` announces it; none for another stream
  /// or without the group, and then the offer announces the stream alone.
  @Test func theRetransmissionSSRCIsReadFromTheFIDGroup() {
    let made =
      "m=video 9 UDP/TLS/RTP/SAVPF 96 97\r\na=ssrc-group:FID 1032970758 2546910164\r\na=ssrc:1032970758 cname:x\r\n"
    #expect(SimulcastSDP.retransmissionSSRC(of: 1_032_970_758, in: made) == 2_546_910_164)
    #expect(SimulcastSDP.retransmissionSSRC(of: 21, in: made) == nil)
    #expect(SimulcastSDP.retransmissionSSRC(of: 21, in: "m=video 9 UDP/TLS/RTP/SAVPF 96\r\n") == nil)
    let alone = SimulcastSDP.offer("v=0\r\n" + made, rids: ["f", "h"], fullSize: (21, nil, "me"))
    #expect(!alone.contains("ssrc-group") && alone.contains("a=ssrc:21 cname:me") && !alone.contains("1032970758"))
  }

  @Test func anOfferWithoutVideoIsLeftAlone() {
    let audioOnly = "v=0\r\ns=-\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=ssrc:13 cname:x\r\n"
    #expect(SimulcastSDP.offer(audioOnly, rids: ["f", "h"], fullSize: (21, 22, "me")) == audioOnly)
  }

  @Test(arguments: [
    // Janus's answer, and the same with LF line ends.
    ("m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rid:f recv\r\na=rid:h recv\r\na=simulcast:recv f;h;q\r\n", ["f", "h", "q"]),
    ("m=video 9 UDP/TLS/RTP/SAVPF 96\na=simulcast:recv f;h\n", ["f", "h"]),
    // Both directions, alternatives and a paused layer.
    ("m=video 9 RTP/AVP 96\r\na=simulcast:send 1 recv f;~h,q\r\n", ["f", "q"]),
    // No simulcast taken: in the video (an audio line does not count), or no video at all.
    ("m=audio 9 RTP/AVP 111\r\na=simulcast:recv f\r\nm=video 9 RTP/AVP 96\r\na=sendrecv\r\n", []),
    ("m=video 9 RTP/AVP 96\r\na=simulcast:send f;h\r\n", []),
    ("m=video 9 RTP/AVP 96\r\na=simulcast:recv\r\n", []),
    ("v=0\r\ns=-\r\n", []),
  ])
  func theAnswerSaysWhichLayersItTakes(_ answer: String, _ rids: [String]) {
    #expect(SimulcastSDP.acceptedRIDs(in: answer) == rids)
  }
}

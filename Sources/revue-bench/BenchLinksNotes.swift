import RevueLab

/// The prose of docs/loss-recovery.md: how Revue recovers lost packets, how `revue-bench links`
/// measures it, and the closing note.
extension BenchCommand.Links {
  /// How loss recovery works in Revue (`LossRecovery`, `RTPSender`, `RTPReceiver`).
  static let howItWorks = """
    ## How Revue recovers lost packets

    Every video stream has two ways back from a loss; the first is on by default
    (`LossRecovery.nack`, `VideoPublishOptions.lossRecovery` and `Room.listen(…lossRecovery:)`),
    the second always on.

    **NACK and RTX (RFC 4585, RFC 4588).** The receiver's `rtpjitterbuffer` (latency 300 ms,
    `Room.defaultLatency`) passes packets on as soon as they are in order, so its latency costs
    nothing while nothing is lost: it is how long a missing packet is waited for. When it sees a
    gap in the sequence numbers it asks for the missing packet, and `RTPReceiver` sends that
    request at once as an RTCP generic NACK from its own RTCP socket (the one it receives the
    sender's reports on) to the sender's RTCP address, rather than leave it to `rtpsession`,
    whose early-feedback rule would send one early report per report interval (a second here):
    a lost packet would wait for its NACK longer than the jitter buffer waits for it. The first
    request for a packet goes **four times** (`RTPReceiver.firstNACKCopies`): a lost NACK or a
    lost retransmission costs a round trip, and through 5% loss each way a request fails once in
    about 11,000 (0.0975⁴) instead of once in ten. A request not answered is sent again (three copies)
    **120 ms** after the last (`nackRetryMilliseconds`: longer than the 40–80 ms round trips
    measured here, so only failed requests are retried), until the jitter buffer gives the packet
    up at 300 ms. The sender keeps **1 s** of what it sent (`rtprtxsend`, `LossRecovery.historyMilliseconds`,
    longer than the jitter buffer waits, so every NACK that can still help is answered) and sends
    each packet asked for again on a stream of its own (its own SSRC, payload type 97, announced
    in the SDP with `a=ssrc-group:FID`); the receiver's `rtprtxreceive` turns it back into the
    packet it carries, ahead of the jitter buffer.

    **Where feedback goes.** Revue's senders send RTP, send RTCP and receive RTCP on one socket,
    so a receiver knows where to send feedback from the **first RTP packet**, before the first
    sender report; it follows the reports' source address from then on, and a new SSRC (a
    restarted sender) at once.

    **Keyframe requests (RTCP PLI).** A packet given up (or a decoder that cannot go on) makes
    the depayloader drop everything up to the next keyframe (`wait-for-keyframe=true`: no picture
    is shown built on a missing packet) and ask for one; `RTPReceiver` sends the PLI at once, at
    most one per **100 ms** (`pictureLossInterval`: a lost request goes again after that), and the
    sender honours at most one per **250 ms** (`RTPSender.keyframeRequestInterval`: a keyframe
    costs several frames' worth of bits, and several receivers ask at once). Encoders also make a
    keyframe every 2 s of their own.

    **FEC (ULPFEC, RFC 5109), an option (`LossRecovery.fec`).** The sender adds 20% of FEC
    packets (`rtpulpfecenc percentage=20 multipacket=true`, payload type 122); the receiver keeps
    what came (`rtpstorage`, the jitter buffer's latency plus 100 ms) and `rtpulpfecdec`, after
    the jitter buffer, rebuilds a packet the jitter buffer gave up on. It costs a fixed share of
    bandwidth whether or not anything is lost, and saves the round trip: for links whose round
    trip is too long to wait for a resend.

    **After an outage.** A jump of more than 2 s in the sequence numbers
    (`max-dropout-time=2000`) is taken as a new start rather than a loss, so after a long outage
    the jitter buffer does not ask for seconds of packets; the first packets are not a keyframe,
    so the depayloader asks for one.
    """

  /// How the trials are made and judged.
  static func howMeasured(frames: Int, outageFrames: Int) -> String {
    """
    ## How it is measured

    Each trial (`LinkTrial` in RevueLab) publishes a buffer track of stamped frames
    (`StampedFrameSource`: each frame's number in its pixels, and content that costs an encoder
    bits) at 30 fps, at seed 002's bitrate for the size (600 kbit/s at 640×480, 1.5 Mbit/s at
    720p), through `LinkEmulator`, a user-space UDP relay (the kernel here has no `netem`) that
    loses, delays and jitters packets both ways, seeded (no loss at seed 3, 5% at seed 1, 10% at
    seed 2, the outage at seed 5; recovery on and off start from the same draws). The emulator's tap copies every
    packet the sender sent, unimpaired, to a reference receiver. Both receivers are `Room.listen`
    with the same recovery, each rendering into a `FrameProbe` that reads the frame's number and
    hashes every pixel; `FrameJudge` counts a frame **intact** only when the tested receiver showed
    it with exactly the reference's pixels (VP8 and H.264 decoders show frames built on a broken
    reference without a word, so decoder messages prove nothing). The **longest freeze** is the
    longest time the tested receiver's viewer waited for the next intact frame, the link's
    median extra delay taken out. The first 2 s (start-up) and the last half second (still on
    their way) are not judged. The start is measured apart (`LinkTrial.Result.startUp` and
    `whole`, issue 26): the time from the first packet the link delivered to the tested receiver to
    its first intact frame, its intact frames in the second after that packet, and the frames
    intact from the very first. Through 5% loss both ways at 640×480 (seeds 1, 2, 4 and 6 to 10, 150
    frames, and seeds 1 and 3, 600 frames; 2026-12-07) the first picture came 3 to 21 ms after the
    first packet when the first keyframe came whole, about 100 ms (VP8 and H.264) when one of its
    packets was lost and resent, and 96 ms (VP8) or 159 ms (H.264) when its first packet was lost
    (seed 1): no packet before the first one a receiver gets can be asked for, so the depayloader's
    keyframe request at that packet brings frame 3 as a keyframe and frames 0 to 2 are never shown
    (582 of 585 intact from the first frame, 28 in the first second; the reference showed 31).
    `LossRecoveryTests.fivePercentLossBothWays` (seed 1, 640×480; the tests run that size, the bench
    the whole matrix) holds the start to 300 ms and 98% of the frames from the first. Each trial
    runs in a process of its own, on loopback: sender,
    emulator and both receivers (an encoder and two decoders on the machine's cores); one trial
    at a time. Loss trials push
    \(frames) frames, outage trials \(outageFrames), hostile-input trials \(hostileFrames).
    """
  }

  /// What the loss matrix holds.
  static func lossIntroduction(frames: Int) -> String {
    let window = LinkTrial(codec: .vp8, width: 640, height: 480, link: .perfect, recovery: [], frames: frames).window
    return """
      Random loss both ways, 30 ± 10 ms each way, \(frames) frames at 30 fps (frames \(window) judged).
      Targets (issue 13) for recovery on: at 5% loss ≥ 98% of the frames intact and no freeze over
      200 ms; at 10%, ≥ 95% and 500 ms; none without loss (those rows show what recovery costs on a
      link that only delays and jitters). Recovery off is the same run with neither NACK nor FEC
      (keyframe requests still go). *Behind the reference*: the median time from the reference
      receiver's showing of a frame to the tested receiver's (the link's delay and what recovery
      adds).
      """
  }

  /// What the overhead table holds.
  static let overheadIntroduction = """
    Per trial: media packets the link lost forward (of those the sender sent, retransmissions and
    FEC included), feedback packets lost backward, NACK packets the receiver sent (a first request
    counts once, though it goes four times), packets the sender retransmitted and per packet lost
    forward, retransmissions that reached the receiver (`rtprtxreceive`'s count: duplicates of
    packets already there included; the jitter buffer drops those), packets rebuilt from FEC, packets
    the jitter buffer gave up on, keyframes asked for and made, and the packets and bytes the
    sender put on the link against the same run with recovery off.
    """

  /// What the outage table holds, and how recovery time is defined.
  static func outageIntroduction(outageFrames: Int) -> String {
    """
    The link cut both ways for \(seconds(outage)) s once the reference receiver showed frame
    \(LinkTrial.outageFrame) (3 s in), through 30 ± 10 ms without loss, \(outageFrames) frames.
    *Picture back* is the recovery time: from the instant the link came back to the first frame
    the tested receiver showed after it with exactly the reference's pixels. *Frames intact* and
    *longest freeze* are judged outside the outage: the frames the reference showed from the cut
    less the link's 40 ms (their packets may still have been on the link) until the link came
    back are left out, and the time across the outage is no freeze; the wait after it for the
    first intact frame is. Target (issue 13): both ends keep running, the picture is back within
    1 s of the link.
    """
  }

  /// What the hostile-input table holds, and which row the test runs.
  static var hostileIntroduction: String {
    let window = LinkTrial(
      codec: .vp8, width: 640, height: 480, link: hostileLink, recovery: .nack, frames: hostileFrames
    ).window
    return """
      Issue 14: datagrams no honest sender sends, \(LinkTrial.hostileRate) a second, straight to the
      receiver's RTP and RTCP ports (not through the link) from the start of the judged window
      (frame \(window.lowerBound)) until the last frame is pushed, beside a valid stream: VP8 640×480
      through \(percent(hostileLink.loss)) loss both ways at 30 ± 10 ms with NACK (so that the
      receiver's requests, which hostile RTCP could misdirect, are needed), \(hostileFrames) frames at
      seed 14 (frames \(window) judged). The cases (`HostileCase` in RevueLab, seeded): random bytes;
      RTP and RTCP headers cut short; wrong versions; absurd CSRC counts and header extension
      lengths; bad padding; a stranger's stream whose sequence numbers wrap again and again, or
      whose timestamps jump; the sender's own SSRC from another address (RTP, sender reports and
      BYE); a second, well-formed VP8 stream on the same port; RTCP whose lengths and counts lie,
      and feedback about no one; a new SSRC every two packets. Each case alone, then every case at
      once (their datagrams in turn, \(LinkTrial.hostileRate) a second in all): Revue's test
      (`HostileInputTests`) runs that last row. *Not RTP*: packets the receiver dropped as garbage
      (`invalidPackets`); *from other senders*: packets it dropped as not those of the sender it
      follows (`packetsFromOtherSenders`). Target (the test's): ≥ 98% of the frames intact and no
      freeze over 200 ms.
      """
  }

  /// The closing note: what the run shows beyond the tables, and what would fix it.
  static let closing = """
    ## Closing note

    - **Requests for packets that were only late.** The jitter buffer schedules a request for
      each packet at the time it expects it (`rtx-next-seqnum`), and at 30 ± 10 ms a packet can
      come later than that: with no floor under the request (`rtx-min-delay=0`) a VP8 640×480
      stream on this link without loss had 79 requests and 237 resends for 580 packets. With
      the requests held 25 ms past the due time (`RTPReceiver.nackDelayMilliseconds`) the 0% rows
      show what is left: next to none at 640×480 and for H.264, but still about one packet in
      ten resent for VP8 at 720p, whose frames come in longer bursts (the packet after a burst
      is due by the pace within it, a frame early). Each first request goes four times and the
      sender answers every copy that arrives, on purpose: the copies are what protects a request
      against a lost retransmission as well as a lost NACK. Left to do: a due time that knows the
      frame boundary (or `rtx-next-seqnum=false`, which asked for none here but gave up a packet
      at 10% loss at 720p once), so the 720p VP8 row costs what the others do.
    - **FEC.** ULPFEC decodes (the jitter buffer is told the FEC payload type; `rtpulpfecdec`
      gets the stream's SSRC in its caps and never sees the FEC packets, which it would pass on
      to the depayloader). Beside NACK it changes nothing: retransmissions come before the
      jitter buffer gives a packet up, when FEC would step in. Alone, at 20% it protects few
      packets (`rtpulpfecenc` spreads its share per frame, and small frames get none) and every
      unrebuilt loss waits the jitter buffer's 300 ms: better than nothing, far from NACK. FEC
      alone would want a shorter jitter buffer and more protection for keyframes.
    - **Outage.** After 5 s down, both ends were still running and the picture came back in well
      under the second, with recovery on or off: the depayloader's keyframe request goes at the
      first packet back (one PLI, then at most one per 100 ms), and a jump of more than 2 s in
      the sequence numbers is taken as a new start, so nothing waits for five seconds of packets.

    To regenerate this file: `swift build -c release && .build/release/revue-bench links
    --markdown docs/loss-recovery.md` (about 8 minutes; nothing else heavy should run then).
    Revue's tests hold recovery on to the same targets (`LossRecoveryTests`, 240 frames each),
    the outage to its second (`LinkRecoveryTests`), and the receiver to the hostile input's
    target with every case at once (`HostileInputTests`).
    """
}

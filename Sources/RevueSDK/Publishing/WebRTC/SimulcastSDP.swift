/// Simulcast in SDP, by RTP stream id (RID, RFC 8851; simulcast, RFC 8853), as browsers offer it
/// to an SFU: GStreamer 1.22's `webrtcbin` writes neither, so a WHIP publication adds them to its
/// offer and reads the answer's.
///
/// An offer of three layers, the full size first (the order of Chrome and of Janus's default):
///
///     a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id     (from the payloaders' caps)
///     a=extmap:2 urn:ietf:params:rtp-hdrext:sdes:mid
///     a=rid:f send
///     a=rid:h send
///     a=rid:q send
///     a=simulcast:send f;h;q
///
/// Each layer's packets carry their RID and their section's MID in those header extensions; the
/// answerer finds the section by the MID and the layer by the RID. Of SSRCs the offer announces
/// only the full size's and its retransmissions' (`a=ssrc-group:FID`), as Firefox announces its
/// layers': an endpoint that takes no simulcast and maps retransmissions by SSRC (aiortc) finds
/// them by it; an SFU binds it to the full size, which it is.
enum SimulcastSDP {
  /// The header extension each layer's RID travels in (RFC 8852), and its id in the offer.
  static let streamIDExtension = (uri: "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id", id: 1)
  /// The header extension the video section's MID travels in (RFC 8843), and its id in the offer.
  static let midExtension = (uri: "urn:ietf:params:rtp-hdrext:sdes:mid", id: 2)

  /// The RIDs of `count` layers, the full size first: `f`, `h`, `q` (full, half, quarter).
  static func rids(count: Int) -> [String] { Array(["f", "h", "q"].prefix(count)) }

  /// `offer` with its first video section offering the layers `rids`: an `a=rid:RID send` line
  /// each and `a=simulcast:send`, with the SSRC lines of `fullSize` (its stream and, when it has
  /// one, its retransmissions', under `cname`) in place of `webrtcbin`'s. Other sections are
  /// left as they are.
  static func offer(_ offer: String, rids: [String], fullSize: (ssrc: UInt32, rtx: UInt32?, cname: String)) -> String {
    var sections = SDPSections(offer)
    guard let video = sections.firstIndex(ofMedia: "video") else { return offer }
    var ssrcs = ["a=ssrc:\(fullSize.ssrc) cname:\(fullSize.cname)"]
    if let rtx = fullSize.rtx {
      ssrcs = ["a=ssrc-group:FID \(fullSize.ssrc) \(rtx)"] + ssrcs + ["a=ssrc:\(rtx) cname:\(fullSize.cname)"]
    }
    sections.media[video] =
      sections.media[video].filter { !$0.hasPrefix("a=ssrc:") && !$0.hasPrefix("a=ssrc-group:") } + ssrcs
      + rids.map { "a=rid:\($0) send" } + ["a=simulcast:send " + rids.joined(separator: ";")]
    return sections.text
  }

  /// The SSRC of the retransmissions of `ssrc` that `sdp` announces (`a=ssrc-group:FID SSRC
  /// RTX`), if it does.
  static func retransmissionSSRC(of ssrc: UInt32, in sdp: String) -> UInt32? {
    for line in sdp.split(whereSeparator: \.isNewline) where line.hasPrefix("a=ssrc-group:FID ") {
      let fields = line.dropFirst("a=ssrc-group:FID ".count).split(separator: " ")
      if fields.count == 2, UInt32(fields[0]) == ssrc { return UInt32(fields[1]) }
    }
    return nil
  }

  /// The `a=mid` of the first video section of `sdp`.
  static func firstVideoMID(in sdp: String) -> String? {
    let sections = SDPSections(sdp)
    return sections.firstIndex(ofMedia: "video").flatMap { video in
      sections.media[video].first { $0.hasPrefix("a=mid:") }.map { String($0.dropFirst("a=mid:".count)) }
    }
  }

  /// The RIDs the answer's first video section receives (`a=simulcast:recv`), in its order,
  /// alternatives flattened and paused ones (`~RID`) left out; empty when it takes no simulcast
  /// (the offerer then sends its first layer alone, RFC 8853 §5.3).
  static func acceptedRIDs(in answer: String) -> [String] {
    let sections = SDPSections(answer)
    guard let video = sections.firstIndex(ofMedia: "video"),
      let line = sections.media[video].first(where: { $0.hasPrefix("a=simulcast:") })
    else { return [] }
    // a=simulcast:recv f;h;q, or with both directions: a=simulcast:send 1 recv f;h,h2;~q
    let words = line.dropFirst("a=simulcast:".count).split(separator: " ")
    guard let recv = words.firstIndex(of: "recv"), recv + 1 < words.count else { return [] }
    return words[recv + 1].split(whereSeparator: { $0 == ";" || $0 == "," })
      .filter { !$0.hasPrefix("~") }.map(String.init)
  }
}

/// An SDP split into its session part and its media sections (each from its `m=` line), with
/// the line ending it came with (`\r\n` as RFC 4566 asks, or `\n`).
private struct SDPSections {
  var session: [String]
  var media: [[String]]
  let newline: String

  init(_ text: String) {
    newline = text.contains("\r\n") ? "\r\n" : "\n"
    var session: [String] = []
    var media: [[String]] = []
    for line in text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
      let line = String(line.hasSuffix("\r") ? line.dropLast() : line)
      if line.hasPrefix("m=") {
        media.append([line])
      } else if media.isEmpty {
        session.append(line)
      } else {
        media[media.count - 1].append(line)
      }
    }
    self.session = session
    self.media = media
  }

  /// The index of the first section of `kind` (`video`, `audio`).
  func firstIndex(ofMedia kind: String) -> Int? {
    media.firstIndex { $0[0].hasPrefix("m=\(kind) ") }
  }

  var text: String { (session + media.flatMap { $0 }).map { $0 + newline }.joined() }
}

import Foundation

/// The media sections of an SDP that Revue receives.
struct SDPMedia: Sendable, Hashable {
  enum Kind: Sendable, Hashable {
    case video(VideoCodec)
    /// Opus, in the rtpmap's `channels`; `stereo` is `sprop-stereo` (nil when not said).
    case opus(channels: Int, stereo: Bool?)
  }

  var kind: Kind
  var port: Int
  /// The media's payload type, and those of the loss recovery the section offers: an `rtx`
  /// payload type whose `apt` is the media's (NACK), an `ulpfec` one and its own `rtx` (FEC).
  var payloadTypes: RTPPayloadTypes
  /// The key of an SRTP section (`RTP/SAVP`, `RTP/SAVPF`), from its `a=crypto` line.
  var key: SRTPKey?

  /// The loss recovery the section offers.
  var recovery: LossRecovery { payloadTypes.recovery }

  /// An `a=rtpmap:PT NAME/CLOCKRATE[/CHANNELS]` line as read.
  private struct RTPMap {
    var name: String
    var clockRate: Int
    var channels: Int?
    var line: Int
  }

  /// One `m=` section as read, before it is checked.
  private struct Section {
    var media: String
    var port: Int
    var line: Int
    var secure: Bool
    /// The payload types of the `m=` line, in the sender's order of preference (none for a
    /// profile other than RTP's).
    var formats: [Int]
    var maps: [Int: RTPMap] = [:]
    /// The parameters of each payload type's `a=fmtp` line (names in lower case), and its line.
    var parameters: [Int: (values: [String: String], line: Int)] = [:]
    /// The first usable `a=crypto` key, and the line of the first one that is not.
    var key: SRTPKey?
    var badCrypto: (line: Int, why: String)?
  }

  /// The clock rate each codec is sent at (RFC 7741, RFC 6184, RFC 7587).
  private static let clockRates = ["VP8": 90_000, "H264": 90_000, "OPUS": 48_000]

  /// The sections of `sdp`, in order. Each takes the first payload type of its `m=` line whose
  /// `a=rtpmap` names a codec Revue decodes (VP8 or H264 video, opus audio) at its clock rate, on
  /// a dynamic payload type (96–127); and, for video, the `rtx` payload type whose `a=fmtp`
  /// `apt` is that one, an `ulpfec` one, and the `rtx` of the `ulpfec` one, when the `m=` line
  /// lists them.
  /// - Throws: ``RevueError`` naming the line of a malformed media, rtpmap or fmtp line, a
  ///   payload type that is not a number from 0 to 127, a section with no codec Revue decodes,
  ///   or an SRTP section without a usable `a=crypto` key (never quoting the key).
  /// - Parameters:
  ///   - preferred: the video codec a video section takes when it offers it, whatever its
  ///     place (a WebRTC viewer's offer lists every codec its browser decodes).
  ///   - bundled: whether sections may have port 0: a WebRTC offer's sections bundled on the
  ///     first one's transport (webrtcbin's offers do so); an RTP session's may not.
  static func parse(_ sdp: String, preferring preferred: VideoCodec? = nil, bundled: Bool = false) throws(RevueError)
    -> [SDPMedia]
  {
    var sections: [Section] = []
    for (index, raw) in sdp.split(whereSeparator: \.isNewline).enumerated() {
      let line = raw.trimmingCharacters(in: .whitespaces)
      let number = index + 1
      if line.hasPrefix("m=") {
        let fields = line.dropFirst(2).split(separator: " ")
        guard fields.count >= 4, let port = Int(fields[1]), port > 0 || (bundled && port == 0), port < 65_535 else {
          throw RevueError(.invalidInput, "SDP line \(number): malformed media line '\(line)'")
        }
        let rtp = fields[2].uppercased().contains("RTP/")
        let formats =
          try rtp ? fields[3...].map { field throws(RevueError) in try payloadType(field, line: number) } : []
        let secure = fields[2].uppercased().hasPrefix("RTP/SAVP")
        sections.append(
          Section(media: String(fields[0]), port: port, line: number, secure: secure, formats: formats))
      } else if sections.isEmpty {
        continue
      } else if line.hasPrefix("a=crypto:") {
        guard sections[sections.count - 1].key == nil else { continue }
        do {
          sections[sections.count - 1].key = try cryptoKey(line)
        } catch {
          if sections[sections.count - 1].badCrypto == nil {
            sections[sections.count - 1].badCrypto = (number, error.message)
          }
        }
      } else if line.hasPrefix("a=rtpmap:") {
        let fields = line.dropFirst("a=rtpmap:".count).split(separator: " ", maxSplits: 1)
        let type = try payloadType(fields.first ?? "", line: number)
        let encoding = fields.dropFirst().first?.split(separator: "/", omittingEmptySubsequences: false) ?? []
        guard (2...3).contains(encoding.count), !encoding[0].isEmpty, let clockRate = Int(encoding[1]),
          clockRate > 0, encoding.count == 2 || Int(encoding[2]).map({ $0 > 0 }) == true
        else {
          throw RevueError(
            .invalidInput,
            "SDP line \(number): malformed rtpmap '\(line.prefix(60))': a=rtpmap:PT NAME/CLOCKRATE[/CHANNELS]")
        }
        let map = RTPMap(
          name: String(encoding[0].prefix(32)), clockRate: clockRate,
          channels: encoding.count == 3 ? Int(encoding[2]) : nil,
          line: number)
        if sections[sections.count - 1].maps[type] == nil { sections[sections.count - 1].maps[type] = map }
      } else if line.hasPrefix("a=fmtp:") {
        let fields = line.dropFirst("a=fmtp:".count).split(separator: " ", maxSplits: 1)
        let type = try payloadType(fields.first ?? "", line: number)
        var values: [String: String] = [:]
        for parameter in fields.dropFirst().first?.split(separator: ";") ?? [] {
          let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
          let name = pair[0].trimmingCharacters(in: .whitespaces).lowercased()
          if values[name] == nil { values[name] = pair.dropFirst().first?.trimmingCharacters(in: .whitespaces) ?? "" }
        }
        if sections[sections.count - 1].parameters[type] == nil {
          sections[sections.count - 1].parameters[type] = (values, number)
        }
      }
    }
    guard !sections.isEmpty else { throw RevueError(.invalidInput, "the SDP has no media line ('m=video …')") }
    var media: [SDPMedia] = []
    for section in sections {
      let key: SRTPKey?
      if section.secure {
        guard let found = section.key else {
          if let bad = section.badCrypto { throw RevueError(.invalidInput, "SDP line \(bad.line): \(bad.why)") }
          throw RevueError(
            .invalidInput,
            "SDP line \(section.line): an SRTP section (RTP/SAVP) without a key: add 'a=crypto:1"
              + " AES_CM_128_HMAC_SHA1_80 inline:BASE64' (SDES)")
        }
        key = found
      } else {
        key = nil
      }
      let (kind, type) = try codec(of: section, preferring: preferred)
      var types = RTPPayloadTypes(media: type)
      if case .video = kind {
        types.rtx = try retransmission(of: type, in: section)
        types.fec = section.formats.first { section.maps[$0]?.name.uppercased() == "ULPFEC" }
        if let fec = types.fec { types.fecRTX = try retransmission(of: fec, in: section) }
      }
      media.append(SDPMedia(kind: kind, port: section.port, payloadTypes: types, key: key))
    }
    return media
  }

  /// The payload type `text` says.
  /// - Throws: ``RevueError`` naming `line` when it is not a number from 0 to 127.
  private static func payloadType(_ text: Substring, line: Int) throws(RevueError) -> Int {
    guard !text.isEmpty, text.count <= 3, text.allSatisfy({ $0.isASCII && $0.isWholeNumber }), let type = Int(text),
      type <= 127
    else {
      throw RevueError(
        .invalidInput, "SDP line \(line): payload type '\(text.prefix(20))' is not a number from 0 to 127")
    }
    return type
  }

  /// The codec of the first payload type of `section`'s `m=` line that Revue decodes, and that
  /// payload type.
  /// - Throws: ``RevueError`` naming the line of the first codec Revue knows that is offered in
  ///   a way it cannot take (another clock rate, more than two channels, a static payload
  ///   type), or the `m=` line when no codec is one Revue knows.
  private static func codec(of section: Section, preferring preferred: VideoCodec?) throws(RevueError) -> (Kind, Int) {
    var refusal: RevueError?
    var formats = section.formats
    if let preferred, section.media == "video" {
      let name = preferred == .vp8 ? "VP8" : "H264"
      // H.264 as Revue sends it first: fragmented (packetization mode 1), constrained baseline.
      let rank = { (type: Int) -> Int in
        let values = section.parameters[type]?.values ?? [:]
        let profile = values["profile-level-id"]?.lowercased() ?? ""
        return (values["packetization-mode"] == "1" ? 0 : 2) + (profile.hasPrefix("42e0") ? 0 : 1)
      }
      let first = formats.filter { section.maps[$0]?.name.uppercased() == name }
        .enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
      formats = first + formats.filter { !first.contains($0) }
    }
    for type in formats {
      guard let map = section.maps[type] else { continue }
      let name = map.name.uppercased()
      let kind: Kind
      switch (section.media, name) {
      case ("video", "VP8"): kind = .video(.vp8)
      case ("video", "H264"): kind = .video(.h264)
      case ("audio", "OPUS"):
        let stereo = section.parameters[type]?.values["sprop-stereo"].flatMap { ["0": false, "1": true][$0] }
        kind = .opus(channels: map.channels ?? 1, stereo: stereo)
      default: continue
      }
      let problem: String? =
        if let rate = clockRates[name], map.clockRate != rate {
          "\(map.name) at \(map.clockRate) Hz is not received: it is sent at \(rate) Hz"
        } else if case .opus(let channels, _) = kind, channels > 2 {
          "opus in \(channels) channels is not received (1 or 2)"
        } else if !(96...127).contains(type) {
          "\(map.name) on payload type \(type) is not received: it takes a dynamic payload type (96-127)"
        } else {
          nil
        }
      guard let problem else { return (kind, type) }
      if refusal == nil { refusal = RevueError(.invalidInput, "SDP line \(map.line): \(problem)") }
    }
    if let refusal { throw refusal }
    let offered = section.formats.prefix(4).map { section.maps[$0]?.name ?? "payload type \($0)" }
    let names = offered.isEmpty ? "no RTP payload type" : offered.joined(separator: ", ")
    throw RevueError(
      .invalidInput,
      "SDP line \(section.line): \(section.media) in \(names)\(section.formats.count > 4 ? ", …" : "")"
        + " is not received (VP8, H264 or opus)")
  }

  /// The first `rtx` payload type of `section`'s `m=` line whose `apt` is `type`.
  /// - Throws: ``RevueError`` naming the `a=fmtp` line of an `rtx` payload type whose `apt` is
  ///   not a payload type.
  private static func retransmission(of type: Int, in section: Section) throws(RevueError) -> Int? {
    for rtx in section.formats where section.maps[rtx]?.name.uppercased() == "RTX" {
      guard let parameters = section.parameters[rtx], let apt = parameters.values["apt"] else { continue }
      if try payloadType(Substring(apt), line: parameters.line) == type { return rtx }
    }
    return nil
  }

  /// The key of an `a=crypto:TAG SUITE inline:KEY[|LIFETIME][|MKI:LENGTH]` line (RFC 4568).
  /// - Throws: ``RevueError`` saying what is wrong, without the key.
  static func cryptoKey(_ line: String) throws(RevueError) -> SRTPKey {
    let fields = line.dropFirst("a=crypto:".count).split(separator: " ")
    guard fields.count >= 3 else {
      throw RevueError(.invalidInput, "a=crypto needs a tag, a suite and a key (inline:BASE64)")
    }
    guard let suite = SRTPKey.Suite(name: String(fields[1])) else {
      throw RevueError(
        .invalidInput, "the SRTP suite \(fields[1]) is not received (AES_CM_128_HMAC_SHA1_80 or AEAD_AES_128_GCM)")
    }
    guard fields[2].hasPrefix("inline:") else {
      throw RevueError(.invalidInput, "a=crypto's key is not inline:BASE64")
    }
    let parts = fields[2].dropFirst("inline:".count).split(separator: "|", omittingEmptySubsequences: false)
    if parts.dropFirst().contains(where: { $0.contains(":") }) {
      throw RevueError(.invalidInput, "a=crypto's key has a master key identifier (MKI), which is not supported")
    }
    return try SRTPKey(base64: String(parts[0]), suite: suite)
  }
}

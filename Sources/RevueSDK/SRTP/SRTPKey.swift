import Foundation
import GStreamer
import Synchronization

/// The key of an SRTP session (RFC 3711), exchanged out of band as SDES does (RFC 4568: the
/// SDP's `a=crypto` line): a master key and salt, and the protection profile they are for.
///
/// The key is a secret: its ``description``, its mirror and every error about it say which suite
/// it is for and how long it is, never what it is. ``base64`` is the one way to read it (to hand
/// it to the receiver).
public struct SRTPKey: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
  /// The protection profile: cipher and authentication of SRTP and SRTCP alike.
  public enum Suite: String, Sendable, Hashable, CaseIterable {
    /// AES in counter mode with a 128-bit key and HMAC-SHA1 with an 80-bit tag (RFC 4568), the
    /// default: a 30-byte key‖salt. ffmpeg, VLC and libwebrtc take it.
    case aesCM128HMACSHA1_80 = "AES_CM_128_HMAC_SHA1_80"
    /// AES-GCM with a 128-bit key (RFC 7714), encryption and authentication in one: a 28-byte
    /// key‖salt. GStreamer's `srtpenc`/`srtpdec` take it; ffmpeg does not.
    case aeadAES128GCM = "AEAD_AES_128_GCM"

    /// The suite named `name`: its SDES name (`AES_CM_128_HMAC_SHA1_80`, `AEAD_AES_128_GCM`) or
    /// the short one a URL takes (`aes-cm-128-hmac-sha1-80`, `aes-128-gcm`); nil for another.
    public init?(name: String) {
      switch name.lowercased() {
      case "aes_cm_128_hmac_sha1_80", "aes-cm-128-hmac-sha1-80": self = .aesCM128HMACSHA1_80
      case "aead_aes_128_gcm", "aes-128-gcm": self = .aeadAES128GCM
      default: return nil
      }
    }

    /// The bytes of key‖salt the suite takes.
    public var keyLength: Int {
      switch self {
      case .aesCM128HMACSHA1_80: 30
      case .aeadAES128GCM: 28
      }
    }

    /// The names ``init(name:)`` takes, for messages.
    static let names = "aes-cm-128-hmac-sha1-80 (the default) or aes-128-gcm"

    /// `srtpenc`'s and `srtpdec`'s cipher.
    var cipher: String {
      switch self {
      case .aesCM128HMACSHA1_80: "aes-128-icm"
      case .aeadAES128GCM: "aes-128-gcm"
      }
    }

    /// `srtpenc`'s and `srtpdec`'s authentication (GCM authenticates by itself).
    var authentication: String {
      switch self {
      case .aesCM128HMACSHA1_80: "hmac-sha1-80"
      case .aeadAES128GCM: "null"
      }
    }
  }

  /// The protection profile the key is for.
  public let suite: Suite
  /// The master key and salt.
  let bytes: [UInt8]

  /// A key from its base64 text (key‖salt, as in `a=crypto`'s `inline:`).
  /// - Throws: ``RevueError`` (`.invalidInput`) when the text is not base64 or does not decode to
  ///   the suite's length; the message never holds the key.
  public init(base64: String, suite: Suite = .aesCM128HMACSHA1_80) throws(RevueError) {
    guard !base64.isEmpty else { throw RevueError(.invalidInput, "the SRTP key is empty") }
    guard let data = Data(base64Encoded: base64) else {
      throw RevueError(
        .invalidInput,
        "the SRTP key is not base64 (\(base64.count) characters): give the \(suite.keyLength) bytes of key‖salt"
          + " in base64, such as `revue stream --srtp` prints")
    }
    try self.init(bytes: Array(data), suite: suite)
  }

  /// A key from its bytes (key‖salt).
  /// - Throws: ``RevueError`` (`.invalidInput`) when there are not as many as the suite takes.
  public init(bytes: [UInt8], suite: Suite = .aesCM128HMACSHA1_80) throws(RevueError) {
    guard bytes.count == suite.keyLength else {
      throw RevueError(
        .invalidInput,
        "the SRTP key is \(bytes.count) bytes: \(suite.rawValue) takes \(suite.keyLength) (key‖salt, in base64)")
    }
    self.suite = suite
    self.bytes = bytes
  }

  /// A new random key, read from `/dev/urandom`.
  /// - Throws: ``RevueError`` (`.invalidState`) when `/dev/urandom` cannot be read.
  public static func random(suite: Suite = .aesCM128HMACSHA1_80) throws(RevueError) -> SRTPKey {
    guard let device = FileHandle(forReadingAtPath: "/dev/urandom") else {
      throw RevueError(.invalidState, "cannot open /dev/urandom for a new SRTP key")
    }
    defer { try? device.close() }
    let data = (try? device.read(upToCount: suite.keyLength)) ?? nil
    guard let data, data.count == suite.keyLength else {
      throw RevueError(.invalidState, "cannot read a new SRTP key from /dev/urandom")
    }
    return try SRTPKey(bytes: Array(data), suite: suite)
  }

  /// The key in base64, as `a=crypto`'s `inline:` and `--srtp-key` take it. It is the secret
  /// itself: hand it to the receiver only.
  public var base64: String { Data(bytes).base64EncodedString() }

  /// The suite and the length, never the key.
  public var description: String { "SRTPKey(\(suite.rawValue), \(bytes.count) bytes)" }

  /// As ``description``.
  public var debugDescription: String { description }

  /// The suite only: `dump` and debuggers do not show the key either.
  public var customMirror: Mirror { Mirror(self, children: ["suite": suite]) }

  /// The SDP attribute that carries the key (RFC 4568).
  var cryptoAttribute: String { "a=crypto:1 \(suite.rawValue) inline:\(base64)" }

  /// What `srtpdec` asks for each new SSRC: the key and the suite, for SRTP and SRTCP.
  var decoderCaps: Caps {
    var structure = Structure(name: "application/x-srtp")
    structure.set("srtp-key", bytes: bytes)
    for (field, value) in [
      ("srtp-cipher", suite.cipher), ("srtp-auth", suite.authentication), ("srtcp-cipher", suite.cipher),
      ("srtcp-auth", suite.authentication),
    ] {
      try? structure.set(field, value)
    }
    return Caps([structure])
  }

  /// An `srtpenc` that protects RTP and RTCP with this key.
  func encoder(name: String) throws -> Element {
    let encoder = try Element.make("srtpenc", name: name)
    try configure(encoder: encoder)
    return encoder
  }

  /// Sets `encoder` (an `srtpenc`) to protect RTP and RTCP with this key.
  func configure(encoder: Element) throws {
    try encoder.set("key", bytes: bytes)
    try encoder.set("rtp-cipher", Value.enumeration(suite.cipher))
    try encoder.set("rtp-auth", Value.enumeration(suite.authentication))
    try encoder.set("rtcp-cipher", Value.enumeration(suite.cipher))
    try encoder.set("rtcp-auth", Value.enumeration(suite.authentication))
  }

  /// Takes the key out of the caps `encoder` (an `srtpenc`) sends downstream: it puts it there
  /// (`srtp-key`), where every element's debug log would show it. Call once the encoder's
  /// source pads exist (they come with its requested sink pads). `srtpenc`'s own DEBUG line
  /// (`GST_DEBUG=srtpenc:5`) still shows it: GStreamer's debug log is opt-in, for debugging.
  static func keepKey(inside encoder: Element) {
    for pad in encoder.pads where pad.direction == .source {
      pad.addProbe(.eventDownstream) { _, info in
        guard let caps = info.event?.caps, caps.structures.contains(where: { $0.hasField("srtp-key") }) else {
          return .ok
        }
        info.event = .caps(
          Caps(
            caps.structures.map { structure in
              var structure = structure
              structure.removeField("srtp-key")
              structure.removeField("mki")
              return structure
            }))
        return .ok
      }
    }
  }

  /// An `srtpdec` that takes this key for every SSRC.
  func decoder(name: String) throws -> Element {
    let decoder = try Element.make("srtpdec", name: name)
    configure(decoder: decoder)
    return decoder
  }

  /// Gives `decoder` (an `srtpdec`) this key for every SSRC it meets, and keeps the streams it
  /// holds bounded with `streams`, which counts the packets dropped before the decoder.
  func configure(decoder: Element, streams: DecoderStreams = DecoderStreams()) {
    let caps = decoderCaps
    decoder.answerKeyRequests { ssrc in
      guard let roc = streams.keyed(ssrc) else { return caps }
      var structure = caps.structures[0]
      try? structure.set("roc", roc)
      return Caps([structure])
    }
    // On the way in, before the decoder takes its lock: the decoder is the pad's (a probe that
    // held the decoder's wrapper, weakly to spare a cycle, found it gone: the clears did nothing).
    // An SRTP packet's RTP header is in the clear, as are an SRTCP packet's first 8 bytes, with
    // the SSRC of its sender.
    for (name, isRTCP) in [("rtp_sink", false), ("rtcp_sink", true)] {
      decoder.staticPad(name)?.addProbe(.buffer) { pad, info in
        guard let buffer = info.buffer else { return .ok }
        if let reason = streams.clearing() {
          RevueLog.log(.info, "SRTP", "the SRTP decoder's streams cleared (\(reason)), the senders' kept")
          pad.parentElement?.clearKeys()
        }
        let header: (ssrc: UInt32, sequence: UInt16?)? =
          isRTCP
          ? (try? buffer.withUnsafeBytes { $0.count >= 8 ? $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self) : nil })
            .flatMap { $0 }.map { (UInt32(bigEndian: $0), nil) }
          : buffer.rtpHeader.map { ($0.ssrc, $0.sequence) }
        guard let header else { return .ok }  // The decoder drops it and counts it.
        let admitted = streams.admit(
          ssrc: header.ssrc, sequence: header.sequence, from: buffer.senderAddress, at: .now)
        return admitted ? .ok : .drop
      }
    }
    decoder.staticPad("rtp_src")?.addProbe(.buffer) { _, info in
      if let buffer = info.buffer, let header = buffer.rtpHeader {
        streams.authenticated(header.ssrc, sequence: header.sequence, from: buffer.senderAddress, at: .now)
      }
      return .ok
    }
    decoder.staticPad("rtcp_src")?.addProbe(.buffer) { _, info in
      if let buffer = info.buffer, let report = buffer.rtcpSenderInfo {
        streams.authenticated(report.ssrc, sequence: nil, from: buffer.senderAddress, at: .now)
        streams.reported(report.ssrc, packetsSent: report.packetCount)
      }
      return .ok
    }
  }

  /// The key and suite a URL's query gives (`key=BASE64`, `suite=NAME`), nil without a key.
  /// - Throws: ``RevueError`` (`.invalidInput`) for an unknown suite or a malformed key.
  static func from(query url: URL) throws(RevueError) -> SRTPKey? {
    let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
    let suiteName = items.first { $0.name == "suite" }?.value
    let suite = try suiteName.map { name throws(RevueError) in
      guard let suite = Suite(name: name) else {
        throw RevueError(.invalidInput, "unknown SRTP suite '\(name)': \(Suite.names)")
      }
      return suite
    }
    guard let item = items.first(where: { $0.name == "key" }) else {
      if suite != nil { throw RevueError(.invalidInput, "the URL names an SRTP suite but gives no key (key=BASE64)") }
      return nil
    }
    // A '+' of base64 may have come through a form encoder as a space.
    let text = (item.value ?? "").replacingOccurrences(of: " ", with: "+")
    return try SRTPKey(base64: text, suite: suite ?? .aesCM128HMACSHA1_80)
  }

  /// `url` as text with the value of its `key` query item left out, for messages.
  static func redacting(_ url: URL) -> String {
    guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
      let items = components.queryItems, items.contains(where: { $0.name == "key" })
    else { return url.absoluteString }
    components.queryItems = items.map { $0.name == "key" ? URLQueryItem(name: "key", value: "…") : $0 }
    return components.string ?? "\(url.scheme ?? "")://\(url.host ?? ""):\(url.port.map(String.init) ?? "")"
  }
}

import GStreamer
import GStreamerCheck
import RevueLab
import RevueTestSupport
import Testing

@testable import RevueSDK

/// SRTP without a wire: an `srtpenc` and an `srtpdec` set up as the sender and the receiver set
/// them up (``SRTPKey/configure(encoder:)``, ``SRTPKey/configure(decoder:streams:)``, with the
/// receiver's admission of SSRCs), each in a harness. Milliseconds each; ``SRTPTests`` keeps
/// the same behaviour over sockets.
@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(1))) struct SRTPHarnessTests {
  init() { TestEnvironment.prepare() }

  static let caps = "media=(string)video, clock-rate=(int)90000, encoding-name=(string)VP8, payload=(int)96"

  /// The sender's encoder for `key`, in a harness.
  static func encoder(_ key: SRTPKey) throws -> Harness {
    let encoder = try Element.make("srtpenc")
    try key.configure(encoder: encoder)
    let harness = Harness(encoder, sinkPad: "rtp_sink_0", srcPad: "rtp_src_0")
    harness.setSourceCaps(try Caps("application/x-rtp, \(caps)"))
    return harness
  }

  /// The receiver's decoder for `key`, in a harness, with its admission `streams`.
  static func decoder(_ key: SRTPKey, streams: SRTPKey.DecoderStreams) throws -> Harness {
    let decoder = try Element.make("srtpdec")
    key.configure(decoder: decoder, streams: streams)
    let harness = Harness(decoder, sinkPad: "rtp_sink", srcPad: "rtp_src")
    harness.setSourceCaps(try Caps("application/x-srtp, \(caps)"))
    return harness
  }

  /// RTP packet `sequence` of `ssrc`, its payload the sequence number's bytes repeated.
  static func packet(_ sequence: UInt16, ssrc: UInt32 = 0x1234_5678) -> Buffer {
    Buffer(
      copying: [0x80, 96] + bigEndianBytes(sequence) + bigEndianBytes(UInt32(sequence) * 3000) + bigEndianBytes(ssrc)
        + Array(repeating: UInt8(truncatingIfNeeded: sequence), count: 100))
  }

  /// The bytes of `buffer`.
  static func bytes(_ buffer: Buffer) throws -> [UInt8] { try buffer.withUnsafeBytes { Array($0) } }

  /// What `encoder` makes of `packets`, in order: the datagrams a receiver gets, each a buffer
  /// of its own (`srtpdec` takes a buffer still held elsewhere for its own, and frees it).
  static func protect(_ packets: [Buffer], with encoder: Harness) throws -> [[UInt8]] {
    try packets.map { packet in
      try encoder.push(packet)
      return try bytes(try #require(encoder.tryPull(), "srtpenc protected the packet"))
    }
  }

  @Test func whatTheSenderProtectsTheReceiverDecrypts() throws {
    let key = try SRTPKey.random()
    let (encoder, decoder) = (try Self.encoder(key), try Self.decoder(key, streams: .init()))
    let packets = (0..<20).map { Self.packet(UInt16($0)) }
    for protected in try Self.protect(packets, with: encoder) {
      #expect(try protected != Self.bytes(packets[0]))
      try decoder.push(Buffer(copying: protected))
    }
    let decrypted = try (0..<20).map { _ in try Self.bytes(try #require(decoder.tryPull())) }
    #expect(try decrypted == packets.map(Self.bytes))
  }

  /// A packet whose authentication tag was changed on the way is dropped; the next one passes.
  @Test func aTamperedPacketIsDroppedAndTheNextPasses() throws {
    let key = try SRTPKey.random()
    let (encoder, decoder) = (try Self.encoder(key), try Self.decoder(key, streams: .init()))
    let protected = try Self.protect((0..<3).map { Self.packet(UInt16($0)) }, with: encoder)
    try decoder.push(Buffer(copying: protected[0]))
    var tampered = protected[1]
    tampered[tampered.count - 1] ^= 0xFF
    try? decoder.push(Buffer(copying: tampered))
    try decoder.push(Buffer(copying: protected[2]))
    let passed = try (0..<decoder.buffersWaiting).map { _ in try Self.bytes(try #require(decoder.tryPull()))[3] }
    #expect(passed == [0, 2])
  }

  /// Packets protected with another key decrypt to nothing, and a flood of them, each of a new
  /// SSRC (issue 14's `ssrcFlood`), mostly never reaches the decoder: the receiver lets one
  /// stranger's SSRC in per hold, so the decoder's streams stay bounded; the right sender still
  /// gets through.
  @Test func aFloodOfStrangersUnderAnotherKeyIsKeptOut() throws {
    let (key, other) = (try SRTPKey.random(), try SRTPKey.random())
    let streams = SRTPKey.DecoderStreams()
    let decoder = try Self.decoder(key, streams: streams)
    let stranger = try Self.encoder(other)
    for ssrc in 0..<UInt32(500) {
      for protected in try Self.protect([Self.packet(0, ssrc: 0x5000_0000 + ssrc)], with: stranger) {
        try? decoder.push(Buffer(copying: protected))
      }
    }
    #expect(decoder.buffersReceived == 0, "another key's packets decrypted")
    #expect(streams.dropped >= 490, "\(streams.dropped) of 500 kept out before the decoder")
    let sender = try Self.encoder(key)
    for protected in try Self.protect((0..<5).map { Self.packet(UInt16($0)) }, with: sender) {
      try decoder.push(Buffer(copying: protected))
    }
    #expect(decoder.buffersReceived >= 1, "the right sender gets through")
  }
}

import Foundation
import RevueSDK

#if canImport(Glibc)
  import Glibc
#endif

/// The kinds of hostile datagram ``HostileTraffic`` makes for a receiver's RTP and RTCP ports.
public enum HostileCase: String, CaseIterable, Sendable, CustomStringConvertible {
  /// Random bytes of random length (0 to 1500), to both ports.
  case randomBytes
  /// RTP headers cut short (0 to 11 bytes) and RTCP headers cut short (0 to 7 bytes).
  case truncatedHeaders
  /// Well-formed RTP and RTCP with version 0, 1 or 3.
  case wrongVersions
  /// RTP that claims 15 CSRCs in fewer bytes than they take.
  case absurdCSRCCounts
  /// RTP with a header extension that claims up to 65535 words.
  case absurdExtensionLengths
  /// RTP with the padding bit set and a padding count larger than the packet, or zero.
  case badPadding
  /// RTP of a stranger's SSRC whose sequence numbers run across 65535 → 0 again and again.
  case sequenceWraps
  /// RTP of a stranger's SSRC whose timestamps jump by up to 2³¹ between packets.
  case timestampJumps
  /// RTP and RTCP (sender reports, BYE) with the victim's own SSRC, from another address: a
  /// collision or a spoof.
  case ssrcCollisions
  /// A second, well-formed stream on the same port, of the same payload type: a second sender.
  case secondSender
  /// RTCP compounds whose lengths, counts and report blocks lie, and feedback that names
  /// nothing.
  case hostileRTCP
  /// A new SSRC for every two RTP packets (in sequence, as a real stream's) and every sender
  /// report: each would be a new source for the RTP session, and a new stream (a libsrtp
  /// context) for an SRTP decoder, without bound.
  case ssrcFlood

  /// The case's name.
  public var description: String { rawValue }
}

/// Makes hostile datagrams for a receiver (seeded: the same seed gives the same datagrams) and
/// sends them from a socket of its own on loopback. With several cases, their datagrams take
/// turns: one case's, the next's, and round again.
public struct HostileTraffic: Sendable {
  /// One datagram, and whether it is for the RTCP port (`port + 1`) rather than the RTP port.
  public typealias Datagram = (bytes: [UInt8], toRTCP: Bool)

  /// The datagrams sent to each port.
  public struct Sent: Codable, Sendable, Hashable, CustomStringConvertible {
    /// To the RTP port.
    public var rtp = 0
    /// To the RTCP port.
    public var rtcp = 0
    /// `1200 RTP + 300 RTCP`.
    public var description: String { "\(rtp) RTP + \(rtcp) RTCP" }

    /// Counts of datagrams sent.
    public init(rtp: Int = 0, rtcp: Int = 0) { (self.rtp, self.rtcp) = (rtp, rtcp) }
  }

  /// One generator for each case sent, in turn.
  private var generators: [CaseTraffic]
  private var turn = 0

  /// Datagrams of `hostileCase` against a stream of `victimSSRC` and `payloadType`.
  public init(_ hostileCase: HostileCase, victimSSRC: UInt32, payloadType: Int = 96, seed: UInt64 = 14) {
    self.init([hostileCase], victimSSRC: victimSSRC, payloadType: payloadType, seed: seed)
  }

  /// Datagrams of each of `cases` in turn (each as it would be alone) against a stream of
  /// `victimSSRC` and `payloadType`. `cases` must not be empty.
  public init(_ cases: [HostileCase], victimSSRC: UInt32, payloadType: Int = 96, seed: UInt64 = 14) {
    precondition(!cases.isEmpty, "hostile traffic of no case")
    generators = cases.map { CaseTraffic($0, victimSSRC: victimSSRC, payloadType: payloadType, seed: seed) }
  }

  /// The next datagram.
  public mutating func next() -> Datagram {
    defer { turn = (turn + 1) % generators.count }
    return generators[turn].next()
  }
  // MARK: - Sending

  /// Sends the datagrams to `host`'s `port` (RTP) and `port + 1` (RTCP) from a socket
  /// of its own on an ephemeral port, `perSecond` of them a second, until `duration` has passed
  /// or the task is cancelled.
  public mutating func send(
    to host: String = "127.0.0.1", port: Int, perSecond: Int, for duration: Duration
  ) async throws -> Sent {
    let socket = try UDPSender()
    var sent = Sent()
    let clock = ContinuousClock()
    let start = clock.now
    let interval = Duration.seconds(1) / perSecond
    // A burst every 10 ms: sleeping per datagram costs more than the datagram.
    let perBurst = max(1, perSecond / 100)
    while clock.now - start < duration, !Task.isCancelled {
      for _ in 0..<perBurst {
        let datagram = next()
        socket.send(datagram.bytes, to: host, port: datagram.toRTCP ? port + 1 : port)
        if datagram.toRTCP { sent.rtcp += 1 } else { sent.rtp += 1 }
      }
      // paces-on-purpose: the traffic's rate
      try? await Task.sleep(until: start + interval * (sent.rtp + sent.rtcp), clock: clock)
    }
    return sent
  }
}

/// The datagrams of one ``HostileCase``, with the state its packets follow (sequence numbers,
/// timestamps, a stranger's SSRC).
private struct CaseTraffic: Sendable {
  typealias Datagram = HostileTraffic.Datagram

  /// What is sent.
  let hostileCase: HostileCase
  /// The SSRC of the stream under attack (for ``HostileCase/ssrcCollisions``).
  let victimSSRC: UInt32
  /// The stream's payload type, which the well-formed cases use so that they reach the
  /// depayloader.
  let payloadType: Int
  private var random: Xoshiro256StarStar
  private var sequence: UInt16
  private var timestamp: UInt32
  private let strangerSSRC: UInt32
  /// The SSRC of ``HostileCase/ssrcFlood``'s packet pair.
  private var floodSSRC: UInt32 = 0

  init(_ hostileCase: HostileCase, victimSSRC: UInt32, payloadType: Int, seed: UInt64) {
    self.hostileCase = hostileCase
    self.victimSSRC = victimSSRC
    self.payloadType = payloadType
    random = Xoshiro256StarStar(
      seed: seed, stream: UInt64(HostileCase.allCases.firstIndex(of: hostileCase) ?? 0))
    sequence = 65_500
    timestamp = 0
    var stranger = victimSSRC
    while stranger == victimSSRC { stranger = UInt32(truncatingIfNeeded: random.next()) }
    strangerSSRC = stranger
  }

  /// The next datagram.
  mutating func next() -> Datagram {
    switch hostileCase {
    case .randomBytes:
      return (bytes(count: Int(random.next() % 1501)), random.next() % 2 == 0)
    case .truncatedHeaders:
      if random.next() % 2 == 0 {
        return (Array(rtp(ssrc: strangerSSRC, payload: 0).prefix(Int(random.next() % 12))), false)
      }
      return (Array(senderReport(ssrc: strangerSSRC).prefix(Int(random.next() % 8))), true)
    case .wrongVersions:
      let version = [UInt8(0), 1, 3][Int(random.next() % 3)]
      let toRTCP = random.next() % 2 == 0
      var packet = toRTCP ? senderReport(ssrc: strangerSSRC) : rtp(ssrc: strangerSSRC, payload: 200)
      packet[0] = (packet[0] & 0x3F) | version << 6
      return (packet, toRTCP)
    case .absurdCSRCCounts:
      var packet = rtp(ssrc: strangerSSRC, payload: Int(random.next() % 48))
      packet[0] = (packet[0] & 0xF0) | 0x0F
      return (packet, false)
    case .absurdExtensionLengths:
      var packet = rtp(ssrc: strangerSSRC, payload: 0)
      packet[0] |= 0x10
      let words = UInt16(truncatingIfNeeded: random.next() % 2 == 0 ? 0xFFFF : random.next())
      packet += [0xBE, 0xDE, UInt8(words >> 8), UInt8(words & 0xFF)] + bytes(count: Int(random.next() % 64))
      return (packet, false)
    case .badPadding:
      var packet = rtp(ssrc: strangerSSRC, payload: 1 + Int(random.next() % 100))
      packet[0] |= 0x20
      packet[packet.count - 1] = random.next() % 4 == 0 ? 0 : UInt8(packet.count + Int(random.next() % 100))
      return (packet, false)
    case .sequenceWraps:
      sequence &+= UInt16(1 + random.next() % 40)
      timestamp &+= 3000
      return (rtp(ssrc: strangerSSRC, payload: 100 + Int(random.next() % 1000)), false)
    case .timestampJumps:
      sequence &+= 1
      timestamp &+= UInt32(truncatingIfNeeded: random.next()) >> 1
      return (rtp(ssrc: strangerSSRC, payload: 100 + Int(random.next() % 1000)), false)
    case .ssrcCollisions:
      switch random.next() % 8 {
      case 0: return (senderReport(ssrc: victimSSRC), true)
      case 1: return (bye(ssrc: victimSSRC), true)
      default:
        sequence = UInt16(truncatingIfNeeded: random.next())
        timestamp = UInt32(truncatingIfNeeded: random.next())
        return (rtp(ssrc: victimSSRC, payload: 100 + Int(random.next() % 1000)), false)
      }
    case .secondSender:
      // A frame of about 5 packets every 3000 ticks (30 fps), the last one marked, each with a
      // VP8 payload descriptor ahead of noise: what a real second encoder would look like.
      sequence &+= 1
      let marker = sequence % 5 == 0
      if sequence % 5 == 1 { timestamp &+= 3000 }
      var packet = rtp(ssrc: strangerSSRC, payload: 0, marker: marker)
      packet += [sequence % 5 == 1 ? 0x10 : 0x00] + bytes(count: 900)
      return (packet, false)
    case .hostileRTCP:
      return (lyingRTCP(), true)
    case .ssrcFlood:
      if random.next() % 5 == 0 { return (senderReport(ssrc: UInt32(truncatingIfNeeded: random.next())), true) }
      sequence &+= 1
      if sequence % 2 == 0 { floodSSRC = UInt32(truncatingIfNeeded: random.next()) }
      return (rtp(ssrc: floodSSRC, payload: 100 + Int(random.next() % 1000)), false)
    }
  }

  // MARK: - Packets

  private mutating func bytes(count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
  }

  /// An RTP packet of `ssrc` at the current sequence number and timestamp, with `payload` random
  /// bytes.
  private mutating func rtp(ssrc: UInt32, payload: Int, marker: Bool = false) -> [UInt8] {
    [0x80, UInt8(payloadType & 0x7F) | (marker ? 0x80 : 0)] + bigEndianBytes(sequence) + bigEndianBytes(timestamp)
      + bigEndianBytes(ssrc) + bytes(count: payload)
  }

  /// An RTCP sender report of `ssrc` with random times and counts.
  private mutating func senderReport(ssrc: UInt32) -> [UInt8] {
    [0x80, 200, 0, 6] + bigEndianBytes(ssrc) + bytes(count: 20)
  }

  /// An RTCP BYE of `ssrc`.
  private func bye(ssrc: UInt32) -> [UInt8] {
    [0x81, 203, 0, 1] + bigEndianBytes(ssrc)
  }

  /// An RTCP compound whose header lies about its length or counts.
  private mutating func lyingRTCP() -> [UInt8] {
    let ssrc = random.next() % 2 == 0 ? victimSSRC : strangerSSRC
    switch random.next() % 7 {
    case 0:  // A sender report claiming 31 report blocks with room for none.
      return [0x9F, 200, 0, 6] + bigEndianBytes(ssrc) + bytes(count: 20)
    case 1:  // A length of 65535 words in a short packet.
      return [0x80, 201, 0xFF, 0xFF] + bigEndianBytes(ssrc) + bytes(count: 24)
    case 2:  // SDES with an item longer than the packet.
      return [0x81, 202, 0, 3] + bigEndianBytes(ssrc) + [1, 255] + bytes(count: 6)
    case 3:  // BYE of 31 sources with a reason longer than the packet.
      return [0x9F, 203, 0, 2] + bigEndianBytes(ssrc) + [200] + bytes(count: 3)
    case 4:  // A NACK and a PLI about SSRCs no one has.
      return [0x81, 205, 0, 3] + bigEndianBytes(ssrc) + bigEndianBytes(UInt32(truncatingIfNeeded: random.next()))
        + bytes(count: 4) + [0x81, 206, 0, 2] + bigEndianBytes(ssrc) + bigEndianBytes(UInt32.max)
    case 5:  // An unknown packet type, then a valid receiver report.
      return [0x80, 199, 0, 1] + bytes(count: 4) + [0x80, 201, 0, 1] + bigEndianBytes(ssrc)
    default:  // A receiver report whose block claims absurd loss and jitter.
      return [0x81, 201, 0, 7] + bigEndianBytes(ssrc) + bigEndianBytes(victimSSRC) + [0xFF, 0x7F, 0xFF, 0xFF]
        + bytes(count: 16)
    }
  }
}

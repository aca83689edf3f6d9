import Foundation
import GStreamer
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// What a publication reads off the receiver reports, in the right units: the jitter of an Opus
/// stream at its 48 kHz.
@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(1))) struct ReceiverReportTests {
  init() { TestEnvironment.prepare() }

  /// Sends an RTCP receiver report from `socket` to `port` on loopback, with one report block
  /// on `ssrc` saying `jitter` (in RTP timestamp units).
  static func sendReceiverReport(from socket: Int32, to port: Int, about ssrc: UInt32, jitter: UInt32) {
    let be32 = { (value: UInt32) in withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    // Header (RR, one block, 7 words after the first), the reporter, then the block: SSRC,
    // fraction and count lost, highest sequence, jitter, LSR, DLSR.
    let packet: [UInt8] =
      [0x81, 201, 0, 7] + be32(0x1234_5678) + be32(ssrc) + be32(0) + be32(1) + be32(jitter) + be32(0) + be32(0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        sendto(socket, packet, packet.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }

  /// A receiver's jitter of 4800 on an Opus stream is 100 ms: RTP timestamps of Opus tick at
  /// 48 kHz (RFC 7587), not at video's 90 kHz, which read it as 53.3 ms.
  @Test func theJitterOfAnOpusStreamIsReadAt48kHz() async throws {
    let microphone = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(microphone.id) }
    let room = Room()
    let participant = try #require(room.localParticipant)
    let port = FreePorts.rtp()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let track = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: microphone))
    let audio = try await participant.publish(audioTrack: track, options: AudioPublishOptions(dtx: false))
    // The report comes from the destination's RTCP port, as a receiver's would.
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port + 1).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    try #require(bound == 0)
    let reports = audio.receiverReports()
    Self.sendReceiverReport(from: fd, to: audio.localRTCPPort, about: audio.ssrc, jitter: 4800)
    try await withDeadline(10, "the receiver report") {
      for await _ in reports { return }
    }
    #expect(audio.statistics.jitter == .milliseconds(100))
    await room.disconnect()
  }
}

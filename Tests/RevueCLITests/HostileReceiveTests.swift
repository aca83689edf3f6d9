import Foundation
import RevueLab
import RevueProcess
import RevueSDK
import RevueTestSupport
import Testing

/// Issue 14's "memory bounded": `revue receive`, plain and SRTP, decoding a stream from
/// `revue stream` while flooded with new SSRCs (``HostileCase/ssrcFlood``: 5000 datagrams a
/// second, a new SSRC for every two RTP packets in sequence and for every sender report),
/// holds its resident memory and keeps decoding. Unbounded, such a flood grew the plain
/// receiver by 11 MiB a second (a source per SSRC in the RTP session) and the SRTP receiver by
/// 35 MiB a second (a libsrtp stream per SSRC).
@Suite(.tier(.realtime, smoke: true), .serialized, .sharedProcess, .timeLimit(.minutes(3))) struct HostileReceiveTests {
  /// The flood's length, and how long the receiver may settle into it before it is measured.
  static let (flood, settle) = (Duration.seconds(8), Duration.seconds(2))
  /// What the receiver may gain from the end of the settling to the end of the flood, KiB.
  static let allowedGrowth = 1024

  /// The frames decoded, from the latest line `revue receive --json` printed.
  static func framesDecoded(_ output: String) -> Int {
    let line = output.split(separator: "\n").last { $0.contains("\"framesDecoded\"") }
    let object = line.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    return object?["framesDecoded"] as? Int ?? 0
  }

  @Test(arguments: [false, true]) func memoryHoldsAndTheStreamDecodesUnderAFloodOfSSRCs(srtp: Bool) async throws {
    let port = FreePorts.rtp()
    let key = try SRTPKey.random()
    let keyOptions = srtp ? ["--srtp-key", key.base64] : []
    let receiver = try ChildProcess(
      RevueExecutableTests.executable, ["receive", "--port", "\(port)", "--duration", "90", "--json"] + keyOptions)
    let sender = try ChildProcess(
      RevueExecutableTests.executable,
      ["stream", "--test-pattern", "--size", "320x240", "--to", "127.0.0.1:\(port)", "--duration", "90"] + keyOptions)
    defer { Task { await sender.stop() } }
    try await receiver.waitForOutput(within: 30, for: "30 frames decoded") { Self.framesDecoded($0) >= 30 }

    // Half a second of flood at a time, the receiver's memory and frames read after each.
    var traffic = HostileTraffic(.ssrcFlood, victimSSRC: 1)
    var sent = HostileTraffic.Sent()
    var readings: [(second: Double, kib: Int, frames: Int)] = []
    let halves = Int(Self.flood / .milliseconds(500))
    for half in 1...halves {
      let part = try await traffic.send(port: port, perSecond: 5000, for: .milliseconds(500))
      (sent.rtp, sent.rtcp) = (sent.rtp + part.rtp, sent.rtcp + part.rtcp)
      let kib = try #require(receiver.reading?.resident, "the receiver ended")
      let frames = Self.framesDecoded(try await receiver.waitForOutput(within: 5, for: "its statistics") { _ in true })
      readings.append((Double(half) / 2, kib, frames))
    }
    let settled = try #require(readings.first { $0.second >= Double(Self.settle.components.seconds) })
    let end = try #require(readings.last)
    let summary =
      "\(srtp ? "SRTP" : "plain") receiver under \(sent): \(settled.kib) KiB at \(settled.second) s,"
      + " \(end.kib) KiB at \(end.second) s; \(end.frames - readings[0].frames) frames decoded meanwhile"
    print(summary)
    // Under AddressSanitizer freed memory waits in its quarantine (up to 256 MiB), so resident
    // memory says nothing there: the plain run measures it.
    if TestEnvironment.sanitizer == nil {
      #expect(end.kib - settled.kib <= Self.allowedGrowth, "\(summary)")
    }
    // 30 frames a second sent; at least half of them decoded, on a machine busy with the flood.
    let seconds = end.second - readings[0].second
    #expect(Double(end.frames - readings[0].frames) >= 15 * seconds / TestEnvironment.timingAllowance, "\(summary)")
    await sender.stop()
    await receiver.stop()
  }
}

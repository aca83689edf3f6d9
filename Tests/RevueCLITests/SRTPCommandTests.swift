import Foundation
import RevueSDK
import RevueTestSupport
import Testing

@testable import revue

/// `revue stream --srtp`/`--srtp-key`, `revue receive --srtp-key`/`--from`: parsed as pure
/// functions, and run end to end with the key kept out of everything but the one line that
/// hands it over.
@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(2))) struct SRTPCommandTests {
  static let key = try! SRTPKey(bytes: (0..<30).map { UInt8($0 * 7) })

  @Test func srtpOptionsParse() throws {
    let made = try #require(try StreamOptions.parse(["--srtp"]))
    #expect(made.makesSRTPKey && made.srtpKey == nil && made.srtpSuite == .aesCM128HMACSHA1_80)
    let gcm = try #require(try StreamOptions.parse(["--srtp", "--srtp-suite", "aes-128-gcm"]))
    #expect(gcm.makesSRTPKey && gcm.srtpSuite == .aeadAES128GCM)
    let given = try #require(try StreamOptions.parse(["--srtp-key", Self.key.base64]))
    #expect(!given.makesSRTPKey && given.srtpKey == Self.key)
    let receive = try #require(
      try ReceiveOptions.parse(["--port", "6000", "--srtp-key", Self.key.base64, "--from", "192.0.2.7"]))
    #expect(receive.srtpKey == Self.key && receive.source == "192.0.2.7")

    let short = Data((0..<10).map { UInt8($0 + 65) }).base64EncodedString()
    for (arguments, words) in [
      (["--srtp-key", short], "stream: --srtp-key: the SRTP key is 10 bytes: AES_CM_128_HMAC_SHA1_80 takes 30"),
      (["--srtp-key", "%%%secret%%%"], "stream: --srtp-key: the SRTP key is not base64"),
      (["--srtp-key", Self.key.base64, "--srtp-suite", "aes-128-gcm"], "AEAD_AES_128_GCM takes 28"),
      (["--srtp-suite", "rot13", "--srtp"], "--srtp-suite is aes-cm-128-hmac-sha1-80 or aes-128-gcm"),
      (["--srtp-suite", "aes-128-gcm"], "--srtp-suite goes with --srtp or --srtp-key"),
    ] {
      do {
        _ = try StreamOptions.parse(arguments)
        Issue.record("\(arguments) parsed")
      } catch {
        #expect(error.description.contains(words), "\(error)")
        if arguments[0] == "--srtp-key" {
          #expect(!error.description.contains(arguments[1]), "the error quotes the key: \(error)")
        }
      }
    }
    #expect(throws: UsageError.self) { try ReceiveOptions.parse(["--sdp", "room.sdp", "--srtp-key", Self.key.base64]) }
    #expect(throws: UsageError.self) { try ReceiveOptions.parse(["--from"]) }
  }

  /// `revue stream --srtp` prints its new key once; `revue receive` with it (and `--from`)
  /// decodes; with another key it decodes nothing and says why. The key is in no other output,
  /// GStreamer's warnings (`GST_DEBUG=3`) included. (From INFO up, GStreamer's core logs the
  /// caps events and structures that carry it: README, "Encrypted streams".)
  @Test func streamWithANewKeyPlaysInReceiveAndTheKeyIsPrintedOnce() async throws {
    let port = FreePorts.rtp()
    let debug = ["GST_DEBUG": "3"]
    let sender = try Subprocess(
      RevueExecutableTests.executable,
      ["stream", "--test-pattern", "--size", "640x480", "--srtp", "--to", "127.0.0.1:\(port)", "--duration", "30"],
      environment: debug)
    let printed = try await sender.waitForOutput(containing: "<the key above>", within: 30)
    let line = try #require(
      printed.split(separator: "\n").first { $0.hasPrefix("SRTP key (AES_CM_128_HMAC_SHA1_80): ") })
    let key = line.split(separator: " ").last.map(String.init) ?? ""
    #expect(try SRTPKey(base64: key).base64 == key)

    let received = try await RevueExecutableTests.run(
      ["receive", "--port", "\(port)", "--srtp-key", key, "--from", "127.0.0.1", "--frames", "20", "--duration", "20"],
      environment: debug)
    #expect(received.status == 0, "\(received.error)")
    #expect(received.error.contains("over SRTP, taking packets from 127.0.0.1 only"), "\(received.error)")

    let other = try SRTPKey.random()
    let refused = try await RevueExecutableTests.run(
      ["receive", "--port", "\(port)", "--srtp-key", other.base64, "--duration", "2", "--json"], environment: debug)
    #expect(refused.status == 0, "\(refused.error)")
    #expect(refused.error.contains("received 0 frames"), "\(refused.error)")
    #expect(refused.error.contains("dropped by SRTP (failed authentication: another key?)"), "\(refused.error)")

    let sent = await sender.stop()
    /// GStreamer's logs would show a key as hex.
    let hex = { (base64: String) in (Data(base64Encoded: base64) ?? Data()).map { String(format: "%02x", $0) }.joined()
    }
    #expect(sent.output.components(separatedBy: key).count == 2, "the key is printed once: \(sent.output)")
    for (name, text) in [
      ("the sender's standard error", sent.error), ("the receiver's output", received.output + received.error),
      ("the other receiver's output", refused.output + refused.error),
    ] {
      #expect(!text.contains(key), "\(name) holds the key")
      #expect(!text.contains(other.base64), "\(name) holds the other key")
      #expect(
        !text.lowercased().contains(hex(key)) && !text.lowercased().contains(hex(other.base64)),
        "\(name) holds a key in hex")
    }
  }
}

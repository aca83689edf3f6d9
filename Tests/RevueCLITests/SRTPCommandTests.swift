import Foundation
import Glibc
import RevueCommandLine
import RevueProcess
import RevueSDK
import RevueTestSupport
import Testing

@testable import revue

/// `revue stream --srtp`/`--srtp-key`, `revue receive --srtp-key`/`--from`: parsed as pure
/// functions, and run end to end with the key kept out of everything but the one line that
/// hands it over.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct SRTPCommandTests {
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

  /// Files of `contents` only their owner reads, in a new directory, which the caller removes.
  static func secretFiles(_ contents: [String]) throws -> (directory: URL, paths: [String]) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("revue-secret-\(UUID().uuidString)")
    try FileManager.default.createDirectory(
      at: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    let paths = contents.indices.map { directory.appendingPathComponent("secret\($0)").path }
    for (content, path) in zip(contents, paths) { try content.write(toFile: path, atomically: false, encoding: .utf8) }
    return (directory, paths)
  }

  /// What `parse` throws, as text, or nil.
  static func failure(_ parse: () throws -> Any?) -> String? {
    do {
      _ = try parse()
      return nil
    } catch {
      return "\(error)"
    }
  }

  /// The key comes from `--srtp-key-file` (its trailing newline trimmed) or `REVUE_SRTP_KEY`
  /// as from `--srtp-key`, which every local user reads in /proc/PID/cmdline: the option before
  /// the file before the variable; the option with its file, an unreadable or empty file are
  /// usage errors that name the file and never quote the key.
  @Test func theKeyComesFromAFileOrTheEnvironment() throws {
    let other = try SRTPKey(bytes: (0..<30).map { UInt8($0 * 3) })
    let (directory, files) = try Self.secretFiles([Self.key.base64 + "\n", "", "%%%secret%%%\r\n", other.base64])
    defer { try? FileManager.default.removeItem(at: directory) }
    do {
      let (keyFile, empty, notBase64, otherFile) = (files[0], files[1], files[2], files[3])
      let environment = ["REVUE_SRTP_KEY": other.base64]
      #expect(try StreamOptions.parse(["--srtp-key-file", keyFile], environment: [:])?.srtpKey == Self.key)
      #expect(try ReceiveOptions.parse(["--srtp-key-file", keyFile], environment: [:])?.srtpKey == Self.key)
      #expect(try StreamOptions.parse([], environment: environment)?.srtpKey == other)
      #expect(try ReceiveOptions.parse(["--port", "6000"], environment: environment)?.srtpKey == other)
      // The option wins over the file, the file over the variable.
      #expect(try StreamOptions.parse(["--srtp-key-file", keyFile], environment: environment)?.srtpKey == Self.key)
      #expect(try StreamOptions.parse(["--srtp-key", Self.key.base64], environment: environment)?.srtpKey == Self.key)
      #expect(try ReceiveOptions.parse(["--srtp-key-file", keyFile], environment: environment)?.srtpKey == Self.key)
      // Neither WebRTC nor an SDP with its own key takes the variable; both refuse a file.
      let whip = ["--whip", "whip+https://sfu.example/whip"]
      #expect(try StreamOptions.parse(whip, environment: environment)?.srtpKey == nil)
      #expect(try ReceiveOptions.parse(["--sdp", "room.sdp"], environment: environment)?.srtpKey == nil)
      #expect(try StreamOptions.parse([], environment: ["REVUE_SRTP_KEY": ""])?.srtpKey == nil)
      let missing = files[0] + ".missing"
      for (failure, says) in [
        (
          Self.failure { try StreamOptions.parse(["--srtp-key", Self.key.base64, "--srtp-key-file", keyFile]) },
          "stream: give --srtp-key or --srtp-key-file, not both"
        ),
        (
          Self.failure { try ReceiveOptions.parse(["--srtp-key-file", missing]) },
          "receive: --srtp-key-file: cannot read '\(missing)': No such file or directory"
        ),
        (
          Self.failure { try StreamOptions.parse(["--srtp-key-file", empty]) },
          "stream: --srtp-key-file: '\(empty)' is empty"
        ),
        (
          Self.failure { try StreamOptions.parse(["--srtp-key-file", "/"]) },
          "stream: --srtp-key-file: cannot read '/': Is a directory"
        ),
        (
          Self.failure { try StreamOptions.parse(["--srtp-key-file", "/dev/zero"]) },
          "stream: --srtp-key-file: '/dev/zero' is longer than 64 KiB: not a secret"
        ),
        (
          Self.failure { try StreamOptions.parse(["--srtp-key-file", notBase64]) },
          "stream: --srtp-key-file: the SRTP key is not base64"
        ),
        (
          Self.failure { try StreamOptions.parse([], environment: ["REVUE_SRTP_KEY": "%%%secret%%%"]) },
          "stream: REVUE_SRTP_KEY: the SRTP key is not base64"
        ),
        (
          Self.failure { try StreamOptions.parse(["--srtp-key-file", otherFile, "--srtp-suite", "aes-128-gcm"]) },
          "stream: --srtp-key-file: the SRTP key is 30 bytes: AEAD_AES_128_GCM takes 28"
        ),
        (
          Self.failure { try ReceiveOptions.parse(["--sdp", "room.sdp", "--srtp-key-file", keyFile]) },
          "receive: with --sdp the key comes from the SDP's a=crypto lines: leave out --srtp-key-file"
        ),
        (
          Self.failure { try StreamOptions.parse(whip + ["--srtp-key-file", keyFile], environment: environment) },
          "stream: --whip goes without --srtp"
        ),
      ] {
        #expect(failure?.hasPrefix(says) == true, "\(failure ?? "parsed")")
        #expect(failure.map { !$0.contains("%%%secret%%%") && !$0.contains(Self.key.base64) } ?? true, "quotes a key")
      }
    }
  }

  /// `revue stream --srtp` prints its new key once; `revue receive` with it (and `--from`)
  /// decodes; with another key it decodes nothing and says why. The key is in no other output,
  /// GStreamer's warnings (`GST_DEBUG=3`) included. (From INFO up, GStreamer's core logs the
  /// caps events and structures that carry it: README, "Encrypted streams".)
  @Test func streamWithANewKeyPlaysInReceiveAndTheKeyIsPrintedOnce() async throws {
    let port = FreePorts.rtp()
    let debug = ["GST_DEBUG": "3"]
    let sender = try ChildProcess(
      RevueExecutableTests.executable,
      ["stream", "--test-pattern", "--size", "640x480", "--srtp", "--to", "127.0.0.1:\(port)", "--duration", "30"],
      environment: debug)
    let printed = try await sender.waitForOutput(containing: "<the key above>", within: 30)
    let line = try #require(
      printed.split(separator: "\n").first { $0.hasPrefix("SRTP key (AES_CM_128_HMAC_SHA1_80): ") })
    let key = line.split(separator: " ").last.map(String.init) ?? ""
    #expect(try SRTPKey(base64: key).base64 == key)

    // The key handed over as the sender says: in a file.
    let (directory, files) = try Self.secretFiles([key + "\n"])
    defer { try? FileManager.default.removeItem(at: directory) }
    let received = try await RevueExecutableTests.run(
      [
        "receive", "--port", "\(port)", "--srtp-key-file", files[0], "--from", "127.0.0.1", "--frames", "20",
        "--duration", "20",
      ], environment: debug)
    #expect(received.status == 0, "\(received.error)")
    #expect(received.error.contains("over SRTP, taking packets from 127.0.0.1 only"), "\(received.error)")

    let other = try SRTPKey.random()
    let refused = try await RevueExecutableTests.run(
      ["receive", "--port", "\(port)", "--duration", "2", "--json"],
      environment: debug.merging(["REVUE_SRTP_KEY": other.base64]) { $1 })
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

  /// The SDP that holds a key is readable by its owner only from the moment it exists: in a
  /// new directory nothing changes a file's mode while it is written (a chmod after the write
  /// leaves a moment when anyone can read the key), and a 0644 SDP already there ends up 0600,
  /// its old file never holding the key (a reader who had it open reads the old SDP).
  @Test func theSDPWithAKeyIsOwnerOnlyFromItsCreation() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("revue-sdp-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(at: directory) }
    let sdp = "v=0\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(Self.key.base64)\r\n"
    let mode = { (path: String) -> mode_t in
      var status = stat()
      return stat(path, &status) == 0 ? status.st_mode & 0o777 : 0
    }

    // Every change in the directory while the file is written, as inotify reports it.
    let watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    try #require(watch >= 0, "inotify: \(String(cString: strerror(errno)))")
    defer { close(watch) }
    try #require(
      inotify_add_watch(
        watch, directory.path,
        UInt32(IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE)) >= 0)
    let fresh = directory.appendingPathComponent("room.sdp").path
    try StreamCommand.write(sdp: sdp, to: fresh, secret: true)
    var changes: [(mask: UInt32, name: String)] = []
    var bytes = [UInt8](repeating: 0, count: 65536)
    while case let count = read(watch, &bytes, bytes.count), count > 0 {
      var offset = 0
      while offset + 16 <= count {
        let field = { (at: Int) in
          bytes[offset + at..<offset + at + 4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        let length = Int(field(12))
        let name = bytes[offset + 16..<offset + 16 + length].prefix { $0 != 0 }
        changes.append((field(4), String(decoding: name, as: UTF8.self)))
        offset += 16 + length
      }
    }
    #expect(changes.contains { $0.mask & UInt32(IN_CREATE) != 0 }, "inotify saw no file made: \(changes)")
    let modeChanges = changes.filter { $0.mask & UInt32(IN_ATTRIB) != 0 }.map(\.name)
    #expect(modeChanges.isEmpty, "files whose mode changed after they were made: \(modeChanges)")
    #expect(String(format: "%o", mode(fresh)) == "600")
    #expect(try String(contentsOfFile: fresh, encoding: .utf8) == sdp)

    let existing = directory.appendingPathComponent("old.sdp").path
    try "v=0\r\n".write(toFile: existing, atomically: false, encoding: .utf8)
    try #require(chmod(existing, 0o644) == 0)
    let reader = try FileHandle(forReadingFrom: URL(fileURLWithPath: existing))
    defer { try? reader.close() }
    try StreamCommand.write(sdp: sdp, to: existing, secret: true)
    #expect(String(format: "%o", mode(existing)) == "600")
    #expect(try String(contentsOfFile: existing, encoding: .utf8) == sdp)
    #expect(String(decoding: try reader.readToEnd() ?? Data(), as: UTF8.self) == "v=0\r\n", "the 0644 file got the key")
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["old.sdp", "room.sdp"])
  }
}

import Foundation
import Glibc
import RevueCommandLine
import RevueLab
import RevueProcess
import RevueTestSupport
import Testing

@testable import revue

@Suite(.tier(.unit), .sharedProcess, .timeLimit(.minutes(1))) struct LinkCommandTests {
  @Test func defaultsAndEveryOption() throws {
    let defaults = try #require(try LinkOptions.parse(["--to", "10.0.0.2:5004"]))
    #expect(defaults.host == "10.0.0.2" && defaults.port == 5004 && defaults.listen == 0 && defaults.pairs == 1)
    #expect(defaults.forward == .perfect && defaults.backward == .perfect && defaults.seed == 1)
    #expect(defaults.duration == nil && !defaults.json)
    let options = try #require(
      try LinkOptions.parse([
        "--listen", "6000", "--to", "127.0.0.1:5004", "--pairs", "2", "--loss", "5", "--delay", "40", "--jitter",
        "10.5", "--reorder", "1", "--duplicate", "0.5", "--rate", "2000", "--queue", "50", "--seed", "42",
        "--duration", "30", "--json",
      ]))
    let conditions = LinkConditions(
      loss: 0.05, delay: .milliseconds(40), jitter: .microseconds(10_500), reorder: 0.01, duplicate: 0.005,
      bandwidth: 2_000_000, queue: .milliseconds(50))
    #expect(options.listen == 6000 && options.host == "127.0.0.1" && options.port == 5004 && options.pairs == 2)
    #expect(options.forward == conditions && options.backward == conditions)
    #expect(options.seed == 42 && options.duration == 30 && options.json)
    #expect(try Command.parse(["link", "--to", "127.0.0.1:5004"]) == .link(defaults.with(host: "127.0.0.1")))
    #expect(try Command.parse(["link", "--help"]) == .help)
    #expect(try LinkOptions.parse(["--help"]) == nil)
  }

  @Test func backOptionsSetTheWayBackWhereverTheyStand() throws {
    let options = try #require(
      try LinkOptions.parse([
        "--back-loss", "0", "--back-delay", "5", "--back-jitter", "1", "--back-reorder", "2", "--back-duplicate", "3",
        "--back-rate", "64", "--back-queue", "500", "--to", "127.0.0.1:5004", "--loss", "20", "--delay", "100",
      ]))
    #expect(options.forward == LinkConditions(loss: 0.2, delay: .milliseconds(100)))
    #expect(
      options.backward
        == LinkConditions(
          loss: 0, delay: .milliseconds(5), jitter: .milliseconds(1), reorder: 0.02, duplicate: 0.03,
          bandwidth: 64_000, queue: .milliseconds(500)))
  }

  @Test func badOptionsAreUsageErrorsNamingThem() {
    for (arguments, message) in [
      ([], "link: --to HOST:PORT is required"),
      (
        ["--to", "localhost:5004"],
        "link: --to is HOST:PORT with a numeric IPv4 host, such as 127.0.0.1:5004, not 'localhost:5004'"
      ),
      (
        ["--to", "127.0.0.1"],
        "link: --to is HOST:PORT with a numeric IPv4 host, such as 127.0.0.1:5004, not '127.0.0.1'"
      ),
      (
        ["--to", "127.0.0.1:70000"],
        "link: --to is HOST:PORT with a numeric IPv4 host, such as 127.0.0.1:5004, not '127.0.0.1:70000'"
      ),
      (["--loss", "150"], "link: --loss takes a percentage from 0 to 100, not '150'"),
      (["--back-duplicate", "-1"], "link: --back-duplicate takes a percentage from 0 to 100, not '-1'"),
      (["--delay", "soon"], "link: --delay takes milliseconds from 0 to 3600000, not 'soon'"),
      (["--listen", "0"], "link: --listen takes a port from 1 to 65535, not '0'"),
      (["--rate", "0"], "link: --rate takes a whole number above 0, not '0'"),
      (["--seed", "-3"], "link: --seed takes a whole number from 0, not '-3'"),
      (["--pairs"], "link: --pairs needs a value"),
      (["--back-json"], "link: unknown option '--back-json'"),
      (["--down"], "link: unknown option '--down'"),
    ] as [([String], String)] {
      #expect(throws: UsageError(description: message), "\(arguments)") { try LinkOptions.parse(arguments) }
    }
  }

  @Test func describesTheConditionsInAFewWords() {
    #expect(LinkConditions.perfect.description == "perfect")
    #expect(
      LinkConditions(
        loss: 0.05, delay: .milliseconds(40), jitter: .milliseconds(10), reorder: 0.01, duplicate: 0.005,
        bandwidth: 2_000_000
      ).description
        == "loss 5%, delay 40 ms ± 10 ms, reorder 1%, duplicate 0.5%, rate 2000 kbps with a 100 ms queue")
  }

  /// `revue link` relays packets (each twice here) until SIGTERM (as Ctrl-C), then prints its
  /// counters as JSON.
  @Test func relaysUntilStoppedThenCountsAsJSON() async throws {
    let listen = FreePorts.rtp()
    let destination = FreePorts.rtp()
    let link = try ChildProcess(
      RevueExecutableTests.executable,
      [
        "link", "--listen", "\(listen)", "--to", "127.0.0.1:\(destination)", "--duplicate", "100", "--seed", "9",
        "--json",
      ]
    )
    try await link.waitForError(containing: "revue: link: send to 127.0.0.1:\(listen)-\(listen + 1)", within: 30)
    let received = try await onThread(within: 20, "packets through revue link") {
      let receiver = try UDPSocket(port: destination)
      let sender = try UDPSocket(port: 0)
      for _ in 0..<10 { sender.send(to: listen) }
      return receiver.receive(20, within: 10)
    }
    #expect(received == 20)
    let exit = await link.stop()
    #expect(exit.status == 0, "\(exit.error)")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(exit.output.utf8)) as? [String: Any])
    #expect(object["port"] as? Int == listen && object["seed"] as? Int == 9)
    let forward = try #require(object["forward"] as? [String: Int])
    #expect(forward["packetsIn"] == 10 && forward["bytesIn"] == 1000 && forward["duplicated"] == 10)
    #expect(forward["packetsOut"] == 20 && forward["bytesOut"] == 2000 && forward["lost"] == 0)
    #expect((object["backward"] as? [String: Int])?["packetsIn"] == 0)
  }
}

extension LinkOptions {
  fileprivate func with(host: String) -> LinkOptions {
    var options = self
    options.host = host
    return options
  }
}

/// A UDP socket on 127.0.0.1 that sends 100-byte packets and counts what it receives.
private final class UDPSocket: Sendable {
  let descriptor: Int32

  init(port: Int) throws {
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = Self.address(port)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else {
      close(descriptor)
      throw DeadlineExceeded("cannot bind 127.0.0.1:\(port)")
    }
    self.descriptor = descriptor
  }

  deinit { close(descriptor) }

  func send(to port: Int) {
    var address = Self.address(port)
    let bytes = [UInt8](repeating: 7, count: 100)
    _ = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }

  /// How many of `count` packets came within `seconds` (a receive with that deadline).
  func receive(_ count: Int, within seconds: Double) -> Int {
    var received = 0
    var buffer = [UInt8](repeating: 0, count: 2048)
    var polled = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while received < count {
      let left = ContinuousClock.now.duration(to: deadline)
      guard left > .zero, poll(&polled, 1, Int32(left / .milliseconds(1)) + 1) > 0 else { break }
      if recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { received += 1 }
    }
    return received
  }

  private static func address(_ port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
  }
}

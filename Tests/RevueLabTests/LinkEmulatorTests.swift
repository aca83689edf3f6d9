import Foundation
import Glibc
import RevueSDK
import RevueTestSupport
import Testing

@testable import RevueLab

/// The link emulator relays real UDP on loopback between plain sockets. Every exchange waits for
/// the emulator to have handled what was sent (its counters) and for what it sent to arrive, with
/// a deadline; timing bounds are exact below and generous above, for a loaded machine.
@Suite("Link emulator", .tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1)))
struct LinkEmulatorTests {
  @Test func perfectLinkRelaysEveryPortBothWaysInOrder() async throws {
    let destination = FreePorts.rtp(pairs: 2)
    let emulator = try LinkEmulator(pairs: 2, to: "127.0.0.1", port: destination, seed: 1)
    defer { emulator.stop() }
    #expect(emulator.port % 2 == 0 && emulator.pairs == 2)
    let results = try await onThread(within: 30, "packets both ways on 4 ports") {
      try (0..<4).map { k in
        let sender = try Endpoint()
        let receiver = try Endpoint(port: destination + k)
        let there = try exchange(0..<50, from: sender, to: emulator.port + k, at: receiver, through: emulator)
        // The receiver answers where the packets came from: the emulator's socket for this port.
        let relayPort = there.first?.fromPort ?? 0
        let back = try exchange(
          100..<150, from: receiver, to: relayPort, at: sender, through: emulator, backward: true)
        return (there, back, relayPort)
      }
    }
    for (k, (there, back, relayPort)) in results.enumerated() {
      #expect(there.map(\.sequence) == Array(0..<50), "port \(k)")
      #expect(there.allSatisfy { $0.fromPort == relayPort && $0.size == 200 }, "port \(k)")
      #expect(back.map(\.sequence) == Array(100..<150), "port \(k)")
      #expect(back.allSatisfy { $0.fromPort == emulator.port + k }, "port \(k): replies come from the port sent to")
    }
    let (forward, backward) = emulator.statistics
    for counters in [forward, backward] {
      #expect(counters.packetsIn == 200 && counters.packetsOut == 200 && counters.waiting == 0)
      #expect(counters.bytesIn == 200 * 200 && counters.bytesOut == counters.bytesIn)
      #expect(counters.lost + counters.droppedByQueue + counters.droppedByOutage + counters.undeliverable == 0)
    }
  }

  @Test func lossIsNearItsRateAndRepeatsWithTheSeed() async throws {
    func lost(seed: UInt64) async throws -> (Set<Int>, LinkEmulator.Counters) {
      let destination = FreePorts.rtp()
      let emulator = try LinkEmulator(to: "127.0.0.1", port: destination, forward: .init(loss: 0.05), seed: seed)
      defer { emulator.stop() }
      let arrivals = try await onThread(within: 30, "2000 packets at 5% loss") {
        try exchange(
          0..<2000, chunk: 200, from: Endpoint(), to: emulator.port, at: Endpoint(port: destination), through: emulator)
      }
      return (Set(0..<2000).subtracting(arrivals.map(\.sequence)), emulator.statistics.forward)
    }
    let (first, counters) = try await lost(seed: 42)
    #expect((40...160).contains(first.count), "\(first.count) of 2000 lost at 5%")
    #expect(counters.lost == first.count && counters.packetsOut == 2000 - first.count)
    #expect(try await lost(seed: 42).0 == first, "the same seed loses the same packets")
    #expect(try await lost(seed: 43).0 != first, "another seed loses others")
  }

  @Test func delayIsAtLeastTheBaseEachWay() async throws {
    let destination = FreePorts.rtp()
    let emulator = try LinkEmulator(
      to: "127.0.0.1", port: destination, forward: .init(delay: .milliseconds(30)),
      backward: .init(delay: .milliseconds(20)), seed: 1)
    defer { emulator.stop() }
    let (there, back) = try await onThread(within: 30, "delayed packets") {
      let sender = try Endpoint()
      let receiver = try Endpoint(port: destination)
      let there = try exchange(0..<40, chunk: 10, from: sender, to: emulator.port, at: receiver, through: emulator)
      let relayPort = there.first?.fromPort ?? 0
      let back = try exchange(
        0..<40, chunk: 10, from: receiver, to: relayPort, at: sender, through: emulator, backward: true)
      return (there, back)
    }
    #expect(there.count == 40 && back.count == 40)
    #expect(there.map(\.delay).min()! >= 30_000_000, "never before the base delay")
    #expect(median(there.map(\.delay)) < 130_000_000)
    #expect(back.map(\.delay).min()! >= 20_000_000)
    #expect(median(back.map(\.delay)) < 120_000_000)
  }

  @Test func jitterSpreadsTheDelaysAndKeepsTheOrder() async throws {
    let destination = FreePorts.rtp()
    let emulator = try LinkEmulator(
      to: "127.0.0.1", port: destination, forward: .init(delay: .milliseconds(40), jitter: .milliseconds(20)),
      seed: 7)
    defer { emulator.stop() }
    let arrivals = try await onThread(within: 30, "jittered packets") {
      try exchange(
        0..<300, chunk: 10, from: Endpoint(), to: emulator.port, at: Endpoint(port: destination), through: emulator)
    }
    #expect(arrivals.map(\.sequence) == Array(0..<300), "in order")
    let delays = arrivals.map(\.delay)
    #expect(delays.min()! >= 20_000_000, "never before delay - jitter")
    #expect(delays.max()! - delays.min()! >= 15_000_000, "spread")
    #expect(median(delays) < 160_000_000)
  }

  @Test func reorderLetsPacketsOvertake() async throws {
    let destination = FreePorts.rtp()
    let emulator = try LinkEmulator(
      to: "127.0.0.1", port: destination,
      forward: .init(delay: .milliseconds(20), jitter: .milliseconds(15), reorder: 0.3), seed: 3)
    defer { emulator.stop() }
    let arrivals = try await onThread(within: 30, "reordered packets") {
      try exchange(
        0..<200, chunk: 50, from: Endpoint(), to: emulator.port, at: Endpoint(port: destination), through: emulator)
    }
    let sequences = arrivals.map(\.sequence)
    #expect(sequences.sorted() == Array(0..<200), "nothing lost or doubled")
    let overtaken = zip(sequences, sequences.dropFirst()).filter { $0 > $1 }.count
    #expect(overtaken >= 5, "\(overtaken) packets came before one sent earlier")
  }

  @Test func duplicateSendsSomePacketsTwice() async throws {
    let destination = FreePorts.rtp()
    let emulator = try LinkEmulator(
      to: "127.0.0.1", port: destination, forward: .init(duplicate: 0.1), seed: 5)
    defer { emulator.stop() }
    let arrivals = try await onThread(within: 30, "duplicated packets") {
      try exchange(0..<500, from: Endpoint(), to: emulator.port, at: Endpoint(port: destination), through: emulator)
    }
    let counters = emulator.statistics.forward
    let copies = Dictionary(arrivals.map { ($0.sequence, 1) }, uniquingKeysWith: +)
    #expect(copies.keys.sorted() == Array(0..<500))
    #expect((20...90).contains(counters.duplicated), "\(counters.duplicated) of 500 at 10%")
    #expect(copies.values.filter { $0 == 2 }.count == counters.duplicated && copies.values.allSatisfy { $0 <= 2 })
    #expect(arrivals.count == 500 + counters.duplicated && counters.packetsOut == arrivals.count)
  }

  @Test func bandwidthPacesABurstAndDropsWhatOverflowsTheQueue() async throws {
    let destination = FreePorts.rtp()
    let rate = 4_000_000
    let emulator = try LinkEmulator(
      to: "127.0.0.1", port: destination, forward: .init(bandwidth: rate, queue: .milliseconds(300)), seed: 1)
    defer { emulator.stop() }
    // 400 packets of 10 000 bits at once: 1 s of the link, 0.3 s of queue.
    let arrivals = try await onThread(within: 30, "a burst over a bottleneck") {
      try exchange(
        0..<400, size: 1250, chunk: 400, from: Endpoint(), to: emulator.port, at: Endpoint(port: destination),
        through: emulator)
    }
    let counters = emulator.statistics.forward
    #expect(counters.packetsOut + counters.droppedByQueue == 400 && arrivals.count == counters.packetsOut)
    #expect(counters.droppedByQueue >= 200, "\(counters.droppedByQueue) dropped")
    #expect(arrivals.map(\.sequence) == arrivals.map(\.sequence).sorted(), "first in, first out")
    // Measured from the arrival of the quarter, as the first ones wait for the test to end sending.
    let from = arrivals.count / 4
    let span = Double(arrivals.last!.receivedAt - arrivals[from].receivedAt) / 1e9
    let measured = Double((arrivals.count - 1 - from) * 10_000) / span
    #expect(measured > 0.6 * Double(rate) && measured < 1.5 * Double(rate), "\(Int(measured)) bit/s through \(rate)")
  }

  @Test func anOutageDropsEverythingUntilItEnds() async throws {
    let destination = FreePorts.rtp()
    let emulator = try LinkEmulator(to: "127.0.0.1", port: destination, seed: 1)
    defer { emulator.stop() }
    let results = try await onThread(within: 30, "packets around outages") {
      let sender = try Endpoint()
      let receiver = try Endpoint(port: destination)
      let first = try exchange(0..<10, from: sender, to: emulator.port, at: receiver, through: emulator)
      let relayPort = first.first?.fromPort ?? 0
      emulator.forward.isDown = true
      let cut = try exchange(10..<60, from: sender, to: emulator.port, at: receiver, through: emulator)
      emulator.forward.isDown = false
      let restored = try exchange(60..<110, from: sender, to: emulator.port, at: receiver, through: emulator)
      emulator.backward.isDown = true
      let cutBack = try exchange(0..<20, from: receiver, to: relayPort, at: sender, through: emulator, backward: true)
      emulator.backward.isDown = false
      let restoredBack = try exchange(
        20..<40, from: receiver, to: relayPort, at: sender, through: emulator, backward: true)
      return (cut, restored, cutBack, restoredBack)
    }
    #expect(results.0.isEmpty && results.2.isEmpty)
    #expect(results.1.map(\.sequence) == Array(60..<110) && results.3.map(\.sequence) == Array(20..<40))
    let (forward, backward) = emulator.statistics
    #expect(forward.droppedByOutage == 50 && forward.packetsOut == 60)
    #expect(backward.droppedByOutage == 20 && backward.packetsOut == 20)
  }

  @Test func theTapSeesEveryPacketAsSentEvenWhenTheLinkLosesAll() async throws {
    let destination = FreePorts.rtp()
    let tap = FreePorts.rtp()
    let emulator = try LinkEmulator(
      to: "127.0.0.1", port: destination, forward: .init(loss: 1), seed: 1, tap: tap)
    defer { emulator.stop() }
    let results = try await onThread(within: 30, "tapped packets") {
      let senders = try [Endpoint(), Endpoint()]
      let receivers = try [Endpoint(port: destination), Endpoint(port: destination + 1)]
      let taps = try [Endpoint(port: tap), Endpoint(port: tap + 1)]
      let lostRTP = try exchange(0..<100, from: senders[0], to: emulator.port, at: receivers[0], through: emulator)
      let lostRTCP = try exchange(0..<20, from: senders[1], to: emulator.port + 1, at: receivers[1], through: emulator)
      let tappedRTP = try taps[0].receive(100, within: 10)
      let tappedRTCP = try taps[1].receive(20, within: 10)
      // What the tap's receiver sends back is read and dropped: only the real receiver's reply
      // comes back.
      taps[1].send(999, to: tappedRTCP[0].fromPort)
      emulator.forward = .perfect
      let delivered = try exchange(
        20..<21, from: senders[1], to: emulator.port + 1, at: receivers[1], through: emulator)
      let reply = try exchange(
        0..<1, from: receivers[1], to: delivered[0].fromPort, at: senders[1], through: emulator, backward: true)
      return (lostRTP.count + lostRTCP.count, tappedRTP, tappedRTCP, reply)
    }
    #expect(results.0 == 0)
    #expect(results.1.map(\.sequence) == Array(0..<100) && results.1.allSatisfy { $0.size == 200 })
    #expect(results.2.map(\.sequence) == Array(0..<20))
    #expect(results.3.map(\.sequence) == [0])
    let (forward, backward) = emulator.statistics
    #expect(forward.lost == 120 && forward.packetsIn == 121 && backward.packetsIn == 1)
  }

  @Test func stopClosesTheSocketsOnceFromAnyThread() async throws {
    let emulator = try LinkEmulator(
      pairs: 2, to: "127.0.0.1", port: FreePorts.rtp(pairs: 2), seed: 1, tap: FreePorts.rtp(pairs: 2))
    let port = emulator.port
    _ = try await onThreads(3, within: 10, "stop on 3 threads") { _ in emulator.stop() }
    emulator.stop()
    for k in 0..<4 { _ = try Endpoint(port: port + k) }
    // deinit stops too.
    var dropped: Int?
    do { dropped = try LinkEmulator(to: "127.0.0.1", port: FreePorts.rtp(), seed: 1).port }
    for k in 0..<2 { _ = try Endpoint(port: dropped! + k) }
  }

  @Test func refusesABusyPortAndAHostName() throws {
    let busy = try Endpoint(port: FreePorts.rtp())
    #expect {
      try LinkEmulator(listeningOn: busy.port, to: "127.0.0.1", port: FreePorts.rtp(), seed: 1)
    } throws: { ($0 as? RevueError)?.message == "port \(busy.port) is in use" }
    #expect {
      try LinkEmulator(to: "localhost", port: FreePorts.rtp(), seed: 1)
    } throws: { ($0 as? RevueError)?.message == "'localhost' is not a numeric IPv4 address" }
  }

  @Test func packetsBeyondTheWaitingLimitAreDropped() async throws {
    let destination = FreePorts.rtp()
    let emulator = try LinkEmulator(
      listeningOn: 0, pairs: 1, to: "127.0.0.1", port: destination, forward: .init(delay: .seconds(10)),
      backward: .perfect,
      seed: 1, tap: nil, limits: (packets: 100, bytes: 1 << 20))
    defer { emulator.stop() }
    let counters = try await onThread(within: 30, "150 packets in") {
      let sender = try Endpoint()
      for sequence in 0..<150 { sender.send(sequence, to: emulator.port) }
      try sender.waitUntil("150 packets in", within: 10) { emulator.statistics.forward.packetsIn == 150 }
      return emulator.statistics.forward
    }
    #expect(counters.waiting == 100 && counters.droppedByQueue == 50)
  }
}

/// A packet that arrived at an ``Endpoint``.
private struct Arrival: Sendable {
  var sequence: Int
  var size: Int
  /// When it was sent and received, on `CLOCK_MONOTONIC`, in nanoseconds.
  var sentAt: UInt64
  var receivedAt: UInt64
  var fromPort: Int

  var delay: UInt64 { receivedAt - sentAt }
}

/// A UDP socket on 127.0.0.1 that sends numbered packets (the number and the time sent, then
/// padding) and receives them with a deadline.
private final class Endpoint: Sendable {
  let descriptor: Int32
  let port: Int

  /// A socket bound to `port` (0: any free port).
  init(port: Int = 0) throws {
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var size: Int32 = 4 << 20
    _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    var address = Self.address(port)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else {
      close(descriptor)
      throw DeadlineExceeded("cannot bind 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    self.descriptor = descriptor
    self.port = Int(UInt16(bigEndian: address.sin_port))
  }

  deinit { close(descriptor) }

  /// Sends packet `sequence` of `size` bytes to 127.0.0.1:`port`.
  func send(_ sequence: Int, size: Int = 200, to port: Int) {
    var bytes = [UInt8](repeating: 0, count: max(16, size))
    bytes.replaceSubrange(0..<8, with: bigEndianBytes(UInt64(sequence)))
    bytes.replaceSubrange(8..<16, with: bigEndianBytes(monotonicNow()))
    var address = Self.address(port)
    _ = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }

  /// The next packet, or nil when none comes by `deadline` (`CLOCK_MONOTONIC` nanoseconds).
  func receive(by deadline: UInt64) -> Arrival? {
    var bytes = [UInt8](repeating: 0, count: 65_536)
    while true {
      let now = monotonicNow()
      guard now < deadline else { return nil }
      var polled = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      guard poll(&polled, 1, Int32(min(1 + (deadline - now) / 1_000_000, 1000))) > 0 else { continue }
      var source = sockaddr_in()
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      let count = withUnsafeMutablePointer(to: &source) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          recvfrom(descriptor, &bytes, bytes.count, Int32(MSG_DONTWAIT), $0, &length)
        }
      }
      guard count >= 16 else { continue }
      let receivedAt = monotonicNow()
      func number(at offset: Int) -> UInt64 { bytes[offset..<offset + 8].reduce(0) { $0 << 8 | UInt64($1) } }
      return Arrival(
        sequence: Int(number(at: 0)), size: count, sentAt: number(at: 8), receivedAt: receivedAt,
        fromPort: Int(UInt16(bigEndian: source.sin_port)))
    }
  }

  /// Exactly `count` packets, which must come within `seconds`.
  func receive(_ count: Int, within seconds: Double) throws -> [Arrival] {
    let deadline = monotonicNow() + UInt64(seconds * 1e9)
    var arrivals: [Arrival] = []
    while arrivals.count < count {
      guard let arrival = receive(by: deadline) else {
        throw DeadlineExceeded("waited \(seconds) s for \(count) packets on port \(port): \(arrivals.count) came")
      }
      arrivals.append(arrival)
    }
    return arrivals
  }

  /// Waits until `condition` holds (checked every few milliseconds, or as packets come to this
  /// socket, which are dropped), for up to `seconds`.
  func waitUntil(_ what: String, within seconds: Double, _ condition: () -> Bool) throws {
    let deadline = monotonicNow() + UInt64(seconds * 1e9)
    while !condition() {
      guard monotonicNow() < deadline else { throw DeadlineExceeded("waited \(seconds) s for \(what)") }
      _ = receive(by: min(deadline, monotonicNow() + 2_000_000))
    }
  }

  private static func address(_ port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
  }
}

/// Sends packets `sequences` from `sender` to `port` (the emulator's) in chunks; after each chunk
/// receives at `receiver` until the emulator has taken every packet sent so far, none waits in it,
/// and all it sent on has arrived.
/// - Returns: what arrived, in order of arrival.
private func exchange(
  _ sequences: Range<Int>, size: Int = 200, chunk: Int = 100, from sender: Endpoint, to port: Int,
  at receiver: Endpoint, through emulator: LinkEmulator, backward: Bool = false, within seconds: Double = 15
) throws -> [Arrival] {
  func counters() -> LinkEmulator.Counters { backward ? emulator.statistics.backward : emulator.statistics.forward }
  let before = counters()
  let deadline = monotonicNow() + UInt64(seconds * 1e9)
  var arrivals: [Arrival] = []
  var sent = 0
  for start in stride(from: sequences.lowerBound, to: sequences.upperBound, by: chunk) {
    for sequence in start..<min(start + chunk, sequences.upperBound) {
      sender.send(sequence, size: size, to: port)
      sent += 1
    }
    while true {
      let now = counters()
      if now.packetsIn - before.packetsIn >= sent && now.waiting == 0
        && arrivals.count >= now.packetsOut - before.packetsOut
      {
        break
      }
      guard monotonicNow() < deadline else {
        throw DeadlineExceeded(
          "waited \(seconds) s for \(sent) packets through the emulator: \(arrivals.count) arrived, counters \(now)")
      }
      if let arrival = receiver.receive(by: min(deadline, monotonicNow() + 5_000_000)) { arrivals.append(arrival) }
    }
  }
  return arrivals
}

private func monotonicNow() -> UInt64 {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

private func median(_ values: [UInt64]) -> UInt64 { values.sorted()[values.count / 2] }

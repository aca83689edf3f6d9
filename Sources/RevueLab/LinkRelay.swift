import Glibc

/// The sockets and settings a relay thread starts with.
struct RelaySetup: Sendable {
  /// The sockets senders send to, one a port.
  var listening: [Int32]
  /// The sockets that send to the receiver and read what it sends back, one a port.
  var relaying: [Int32]
  /// The socket that copies forward packets to the tap.
  var tapping: Int32?
  /// The read end of the pipe that `stop()` writes to.
  var wake: Int32
  /// The receiver's IPv4 address, in network byte order.
  var host: UInt32
  var destinationPort: Int
  var tapPort: Int?
  var seed: UInt64
  var limits: (packets: Int, bytes: Int)
}

/// The relay thread's state: it reads packets, draws their fate, and sends them when they are due.
struct LinkRelay: ~Copyable {
  /// A packet on its way.
  private struct Pending {
    /// When it leaves, on `CLOCK_MONOTONIC`, in nanoseconds.
    var due: UInt64
    /// Arrival order, so that packets due at once leave first in, first out.
    var order: UInt64
    var backward: Bool
    /// Which port of the pairs.
    var index: Int
    var data: [UInt8]

    func precedes(_ other: Pending) -> Bool { (due, order) < (other.due, other.order) }
  }

  /// One direction's generator, bottleneck and counters.
  private struct Direction {
    var random: Xoshiro256StarStar
    /// When the bottleneck has sent the last packet queued in it.
    var linkFree: UInt64 = 0
    /// When the last packet that keeps the order leaves.
    var lastInOrder: UInt64 = 0
    var waitingBytes = 0
    var counters = LinkEmulator.Counters()
  }

  private let setup: RelaySetup
  private let shared: LinkShared
  private var directions: [Direction]
  /// A min-heap of the packets on their way, by `(due, order)`.
  private var heap: [Pending] = []
  private var nextOrder: UInt64 = 0
  /// Where backward packets go: the latest source seen on each listening port.
  private var sources: [sockaddr_in?]
  private var destinations: [sockaddr_in]
  private var taps: [sockaddr_in]
  private var conditions: (forward: LinkConditions, backward: LinkConditions)
  private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)

  init(_ setup: RelaySetup, _ shared: LinkShared) {
    self.setup = setup
    self.shared = shared
    directions = [UInt64(0), 1].map { Direction(random: Xoshiro256StarStar(seed: setup.seed, stream: $0)) }
    sources = Array(repeating: nil, count: setup.listening.count)
    destinations = setup.listening.indices.map { Self.address(setup.host, setup.destinationPort + $0) }
    taps = setup.tapPort.map { port in setup.listening.indices.map { Self.address(setup.host, port + $0) } } ?? []
    conditions = shared.conditions.withLock { $0 }
  }

  deinit {
    buffer.deallocate()
    for descriptor in setup.listening + setup.relaying + [setup.wake] { close(descriptor) }
    if let tapping = setup.tapping { close(tapping) }
  }

  /// Relays until `stop()` writes to the wake-up pipe.
  mutating func run() {
    let descriptors = [setup.wake] + setup.listening + setup.relaying + (setup.tapping.map { [$0] } ?? [])
    var polled = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    while true {
      var now = Self.now()
      sendDue(now)
      publish()
      // Milliseconds, rounded up: a packet leaves on time or up to a millisecond late, never early.
      let timeout = heap.first.map { Int32(min(($0.due - now + 999_999) / 1_000_000, 60_000)) } ?? -1
      let ready = poll(&polled, nfds_t(polled.count), timeout)
      // Changed conditions need no wake-up: they apply to the packets read after the change, and
      // an outage to the packets sent after it.
      conditions = shared.conditions.withLock { $0 }
      guard ready > 0 else { continue }  // a timeout, or an interrupted call
      if polled[0].revents != 0 { return }
      let ports = setup.listening.count
      for slot in 1..<polled.count where polled[slot].revents != 0 {
        let index = slot - 1
        if index < ports {
          receive(from: polled[slot].fd, backward: false, index: index)
        } else if index < 2 * ports {
          receive(from: polled[slot].fd, backward: true, index: index - ports)
        } else {
          drain(polled[slot].fd)
        }
        now = Self.now()
        sendDue(now)
      }
    }
  }

  /// Reads what is waiting on a socket (up to a bound, to be fair to the others) and schedules it.
  private mutating func receive(from descriptor: Int32, backward: Bool, index: Int) {
    for _ in 0..<64 {
      var source = sockaddr_in()
      var length = socklen_t(MemoryLayout<sockaddr_in>.size)
      let count = withUnsafeMutablePointer(to: &source) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          recvfrom(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &length)
        }
      }
      guard count >= 0 else { return }
      let data = [UInt8](UnsafeRawBufferPointer(rebasing: buffer[..<count]))
      if !backward {
        sources[index] = source
        if let tapping = setup.tapping { send(data, on: tapping, to: taps[index]) }
      }
      arrive(data, backward: backward, index: index, at: Self.now())
    }
  }

  /// Reads and drops what is waiting on a socket.
  private func drain(_ descriptor: Int32) {
    while recv(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT)) >= 0 {}
  }

  /// Draws a packet's fate and schedules it (and its duplicate).
  private mutating func arrive(_ data: [UInt8], backward: Bool, index: Int, at now: UInt64) {
    let way = backward ? 1 : 0
    let link = backward ? conditions.backward : conditions.forward
    // Four draws a packet whatever the conditions, so that a packet's fate depends only on the
    // seed and its position.
    let lossDraw = directions[way].random.nextUnit()
    let jitterDraw = directions[way].random.nextUnit()
    let reorderDraw = directions[way].random.nextUnit()
    let duplicateDraw = directions[way].random.nextUnit()
    directions[way].counters.packetsIn += 1
    directions[way].counters.bytesIn += data.count
    if link.isDown {
      directions[way].counters.droppedByOutage += 1
      return
    }
    if lossDraw < link.loss {
      directions[way].counters.lost += 1
      return
    }
    guard hasRoom(for: data.count, way) else {
      directions[way].counters.droppedByQueue += 1
      return
    }
    var leavesBottleneck = now
    if let bandwidth = link.bandwidth {
      let start = max(now, directions[way].linkFree)
      if start - now > link.queue.clampedNanoseconds {
        directions[way].counters.droppedByQueue += 1
        return
      }
      directions[way].linkFree = start + UInt64(data.count) * 8_000_000_000 / UInt64(max(1, bandwidth))
      leavesBottleneck = directions[way].linkFree
    }
    let base = Double(link.delay.clampedNanoseconds)
    let jitter = Double(link.jitter.clampedNanoseconds) * (2 * jitterDraw - 1)
    var due = leavesBottleneck + UInt64(max(0, base + jitter))
    if reorderDraw >= link.reorder {
      due = max(due, directions[way].lastInOrder)
      directions[way].lastInOrder = due
    }
    schedule(Pending(due: due, order: 0, backward: backward, index: index, data: data))
    if duplicateDraw < link.duplicate {
      guard hasRoom(for: data.count, way) else {
        directions[way].counters.droppedByQueue += 1
        return
      }
      directions[way].counters.duplicated += 1
      schedule(Pending(due: due, order: 0, backward: backward, index: index, data: data))
    }
  }

  private func hasRoom(for size: Int, _ way: Int) -> Bool {
    directions[way].counters.waiting < setup.limits.packets
      && directions[way].waitingBytes + size <= setup.limits.bytes
  }

  /// Sends the packets due by `now`.
  private mutating func sendDue(_ now: UInt64) {
    while let next = heap.first, next.due <= now {
      let packet = popFirst()
      let way = packet.backward ? 1 : 0
      directions[way].counters.waiting -= 1
      directions[way].waitingBytes -= packet.data.count
      if packet.backward ? conditions.backward.isDown : conditions.forward.isDown {
        directions[way].counters.droppedByOutage += 1
        continue
      }
      let sent: Bool
      if packet.backward {
        if let source = sources[packet.index] {
          sent = send(packet.data, on: setup.listening[packet.index], to: source)
        } else {
          sent = false
        }
      } else {
        sent = send(packet.data, on: setup.relaying[packet.index], to: destinations[packet.index])
      }
      if sent {
        directions[way].counters.packetsOut += 1
        directions[way].counters.bytesOut += packet.data.count
        if directions[way].counters.firstOut == nil { directions[way].counters.firstOut = .now }
      } else {
        directions[way].counters.undeliverable += 1
      }
    }
  }

  /// Makes the counters visible to `statistics`.
  private func publish() {
    let forward = directions[0].counters
    let backward = directions[1].counters
    shared.counters.withLock { $0 = (forward, backward) }
  }

  @discardableResult
  private func send(_ data: [UInt8], on descriptor: Int32, to address: sockaddr_in) -> Bool {
    var address = address
    let sent = data.withUnsafeBytes { bytes in
      withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          sendto(
            descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0,
            socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    }
    return sent == data.count
  }

  // MARK: The heap

  private mutating func schedule(_ packet: Pending) {
    var packet = packet
    packet.order = nextOrder
    nextOrder += 1
    let way = packet.backward ? 1 : 0
    directions[way].counters.waiting += 1
    directions[way].waitingBytes += packet.data.count
    heap.append(packet)
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].precedes(heap[parent]) else { break }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  private mutating func popFirst() -> Pending {
    heap.swapAt(0, heap.count - 1)
    let first = heap.removeLast()
    var parent = 0
    while true {
      var smallest = parent
      for child in (2 * parent + 1)...(2 * parent + 2) where child < heap.count && heap[child].precedes(heap[smallest])
      {
        smallest = child
      }
      guard smallest != parent else { return first }
      heap.swapAt(parent, smallest)
      parent = smallest
    }
  }

  // MARK: Helpers

  private static func now() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }

  private static func address(_ host: UInt32, _ port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = host
    return address
  }
}

/// xoshiro256** (Blackman and Vigna), seeded through SplitMix64: fast, and the same on every machine.
struct Xoshiro256StarStar {
  private var state: (UInt64, UInt64, UInt64, UInt64)

  /// A generator for `seed`, a different one for each `stream`.
  init(seed: UInt64, stream: UInt64) {
    var mix = seed ^ (stream &* 0x9E37_79B9_7F4A_7C15) ^ 0x5265_7675_654C_6162  // "RevueLab"
    func splitMix() -> UInt64 {
      mix &+= 0x9E37_79B9_7F4A_7C15
      var z = mix
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    state = (splitMix(), splitMix(), splitMix(), splitMix())
  }

  mutating func next() -> UInt64 {
    let result = Self.rotate(state.1 &* 5, 7) &* 9
    let t = state.1 << 17
    state.2 ^= state.0
    state.3 ^= state.1
    state.1 ^= state.2
    state.0 ^= state.3
    state.2 ^= t
    state.3 = Self.rotate(state.3, 45)
    return result
  }

  private static func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 { (value << count) | (value >> (64 - count)) }

  /// A uniform draw in 0..<1.
  mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1p-53 }
}

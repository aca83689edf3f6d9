import Foundation
import RevueCommandLine
import RevueLab
import RevueSDK

/// `revue link` options: where to listen, where to relay to, and the link's conditions.
struct LinkOptions: Equatable {
  /// The first port to listen on (on 127.0.0.1); 0 picks a free even port.
  var listen = 0
  /// The receiver's numeric IPv4 address and first port (`--to`, required).
  var host = ""
  var port = 0
  var pairs = 1
  var forward = LinkConditions.perfect
  var backward = LinkConditions.perfect
  var seed: UInt64 = 1
  var duration: Int?
  var json = false

  /// Parses the options after `link`; nil for `--help`. Conditions apply both ways, and the
  /// `--back-` ones to the way back alone, wherever they stand.
  static func parse(_ arguments: [String]) throws(UsageError) -> LinkOptions? {
    var options = LinkOptions()
    var reader = OptionReader(command: "link", arguments)
    var destination: String?
    var backOnly: [(inout LinkConditions) -> Void] = []
    while let option = reader.next() {
      let isBack = option.hasPrefix("--back-")
      let change: (inout LinkConditions) -> Void
      switch isBack ? "--" + option.dropFirst("--back-".count) : option {
      case "--loss":
        let loss = try reader.percent(option)
        change = { $0.loss = loss }
      case "--delay":
        let delay = try reader.milliseconds(option)
        change = { $0.delay = delay }
      case "--jitter":
        let jitter = try reader.milliseconds(option)
        change = { $0.jitter = jitter }
      case "--reorder":
        let reorder = try reader.percent(option)
        change = { $0.reorder = reorder }
      case "--duplicate":
        let duplicate = try reader.percent(option)
        change = { $0.duplicate = duplicate }
      case "--rate":
        let kilobits = try reader.count(option)
        change = { $0.bandwidth = kilobits * 1000 }
      case "--queue":
        let queue = try reader.milliseconds(option)
        change = { $0.queue = queue }
      case _ where isBack:
        throw reader.unknown(option)
      case "--listen":
        options.listen = try reader.port(option)
        continue
      case "--to":
        destination = try reader.value(option)
        continue
      case "--pairs":
        options.pairs = try reader.count(option)
        continue
      case "--seed":
        let text = try reader.value(option)
        guard let seed = UInt64(text) else {
          throw UsageError(description: "link: --seed takes a whole number from 0, not '\(text)'")
        }
        options.seed = seed
        continue
      case "--duration":
        options.duration = try reader.count(option)
        continue
      case "--json":
        options.json = true
        continue
      case "--help", "-h":
        return nil
      default:
        throw reader.unknown(option)
      }
      if isBack {
        backOnly.append(change)
      } else {
        change(&options.forward)
        change(&options.backward)
      }
    }
    for change in backOnly { change(&options.backward) }
    guard let destination else { throw UsageError(description: "link: --to HOST:PORT is required") }
    let parts = destination.split(separator: ":", omittingEmptySubsequences: false)
    var address = in_addr()
    guard parts.count == 2, inet_pton(AF_INET, String(parts[0]), &address) == 1, let port = Int(parts[1]),
      (1...65_535).contains(port)
    else {
      throw UsageError(
        description: "link: --to is HOST:PORT with a numeric IPv4 host, such as 127.0.0.1:5004, not '\(destination)'")
    }
    options.host = String(parts[0])
    options.port = port
    return options
  }
}

extension OptionReader {
  /// A percentage from 0 to 100 after `option`, as a probability.
  fileprivate mutating func percent(_ option: String) throws(UsageError) -> Double {
    let text = try value(option)
    guard let number = Double(text), (0...100).contains(number) else {
      throw error("\(option) takes a percentage from 0 to 100, not '\(text)'")
    }
    return number / 100
  }

  /// Milliseconds (0 or more, fractions allowed) after `option`.
  fileprivate mutating func milliseconds(_ option: String) throws(UsageError) -> Duration {
    let text = try value(option)
    guard let number = Double(text), number >= 0, number <= 3_600_000 else {
      throw error("\(option) takes milliseconds from 0 to 3600000, not '\(text)'")
    }
    return .nanoseconds(Int64(number * 1_000_000))
  }

  /// A UDP port after `option`.
  fileprivate mutating func port(_ option: String) throws(UsageError) -> Int {
    let text = try value(option)
    guard let number = Int(text), (1...65_535).contains(number) else {
      throw error("\(option) takes a port from 1 to 65535, not '\(text)'")
    }
    return number
  }
}

/// `revue link`: relays RTP and RTCP between a sender and a receiver through an emulated bad link,
/// until Ctrl-C or the duration, then prints what happened to the packets each way.
struct LinkCommand {
  var options: LinkOptions

  func run() async throws {
    let emulator = try LinkEmulator(
      listeningOn: options.listen, pairs: options.pairs, to: options.host, port: options.port,
      forward: options.forward, backward: options.backward, seed: options.seed)
    defer { emulator.stop() }
    // Ctrl-C and SIGTERM are caught from before the ready line, so that the counters are printed.
    let stopped = SignalFlag()
    let ports = 2 * options.pairs - 1
    var started = "revue: link: send to 127.0.0.1:\(emulator.port)-\(emulator.port + ports)"
    started += ", relayed to \(options.host):\(options.port)-\(options.port + ports) (seed \(options.seed));"
    started += " forward: \(options.forward); backward: \(options.backward)"
    FileHandle.standardError.write(Data((started + "; Ctrl-C stops\n").utf8))
    let live = !options.json && isatty(STDOUT_FILENO) != 0
    let printer = StatusPrinter(json: false)
    await RunLoopControl.run(duration: options.duration, stopped: stopped) {
      guard live else { return }
      let (forward, backward) = emulator.statistics
      printer.print(
        [],
        text: "forward \(forward.packetsIn) in, \(forward.packetsOut) out  backward \(backward.packetsIn) in,"
          + " \(backward.packetsOut) out")
    }
    if live { printer.finish() }
    emulator.stop()
    let (forward, backward) = emulator.statistics
    if options.json {
      func object(_ counters: LinkEmulator.Counters) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: Self.fields(counters).map { ($0.key, $0.value) })
      }
      let object: [String: Any] = [
        "port": emulator.port, "seed": NSNumber(value: options.seed), "forward": object(forward),
        "backward": object(backward),
      ]
      let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
      print(String(decoding: data, as: UTF8.self))
    } else {
      let names = ["", "in", "bytes in", "lost", "queue drops", "outage drops", "duplicated", "out", "bytes out"]
      let rows =
        [names]
        + [("forward", forward), ("backward", backward)].map { name, counters in
          [name] + Self.fields(counters).prefix(names.count - 1).map { "\($0.value)" }
        }
      let widths = names.indices.map { column in rows.map { $0[column].count }.max()! }
      for row in rows {
        let cells = row.enumerated().map { column, cell in
          column == 0
            ? cell.padding(toLength: widths[0], withPad: " ", startingAt: 0)
            : String(repeating: " ", count: widths[column] - cell.count) + cell
        }
        print(cells.joined(separator: "  "))
      }
      for (name, counters) in [("forward", forward), ("backward", backward)] where counters.undeliverable > 0 {
        print("\(name): \(counters.undeliverable) packets could not be sent on")
      }
    }
  }

  /// The counters in the order of the table, named as in the JSON.
  static func fields(_ counters: LinkEmulator.Counters) -> KeyValuePairs<String, Int> {
    [
      "packetsIn": counters.packetsIn, "bytesIn": counters.bytesIn, "lost": counters.lost,
      "droppedByQueue": counters.droppedByQueue, "droppedByOutage": counters.droppedByOutage,
      "duplicated": counters.duplicated, "packetsOut": counters.packetsOut, "bytesOut": counters.bytesOut,
      "undeliverable": counters.undeliverable,
    ]
  }
}

import Foundation
import RevueSDK

/// `revue check`: what the node needs from GStreamer, and whether it works on this machine.
struct CheckCommand {
  /// Print one JSON object instead of the table.
  var json: Bool

  /// Thrown when an element the node cannot do without is missing.
  struct MissingElements: Error, CustomStringConvertible {
    var missing: [NodeElements.Status]
    var description: String {
      let packages = Set(missing.compactMap(\.package)).sorted().joined(separator: " ")
      return "missing essential elements: \(missing.map(\.requirement.factory).joined(separator: ", "))"
        + (packages.isEmpty ? "" : " (apt-get install \(packages))")
    }
  }

  func run() async throws {
    let statuses = NodeElements.check()
    let selfTest = try await NodeElements.runSelfTest()
    if json {
      printJSON(statuses, selfTest)
    } else {
      printTable(statuses, selfTest)
    }
    let missing = statuses.filter { $0.requirement.isEssential && !$0.isInstalled }
    if !missing.isEmpty { throw MissingElements(missing: missing) }
  }

  private func printTable(_ statuses: [NodeElements.Status], _ selfTest: NodeElements.SelfTest) {
    print("GStreamer \(NodeElements.gstreamerVersion)")
    print("")
    let width = statuses.map(\.requirement.factory.count).max() ?? 0
    for status in statuses {
      let factory = status.requirement.factory.padding(toLength: width, withPad: " ", startingAt: 0)
      let state =
        status.isInstalled
        ? "present (\(status.plugin ?? "?"))"
        : "MISSING" + (status.package.map { ", apt-get install \($0)" } ?? "")
      let need = status.requirement.isEssential ? "essential" : "optional "
      print("  \(factory)  \(need)  \(state)  — \(status.requirement.purpose)")
    }
    let present = statuses.filter(\.isInstalled).count
    print("")
    print("\(present) of \(statuses.count) elements present")
    print(
      "test pipeline: \(selfTest.framesReceived) frames through VP8 and RTP and back (\(selfTest.caps ?? "no caps"))")
  }

  private func printJSON(_ statuses: [NodeElements.Status], _ selfTest: NodeElements.SelfTest) {
    let elements: [[String: Any]] = statuses.map { status in
      var entry: [String: Any] = [
        "factory": status.requirement.factory, "purpose": status.requirement.purpose,
        "essential": status.requirement.isEssential, "present": status.isInstalled,
      ]
      if let plugin = status.plugin { entry["plugin"] = plugin }
      if let package = status.package { entry["package"] = package }
      return entry
    }
    let object: [String: Any] = [
      "gstreamer": NodeElements.gstreamerVersion, "elements": elements,
      "selfTest": ["framesReceived": selfTest.framesReceived, "caps": selfTest.caps as Any? ?? NSNull()],
    ]
    if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
      print(String(decoding: data, as: UTF8.self))
    }
  }
}

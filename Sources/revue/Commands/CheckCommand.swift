import Foundation
import RevueLab
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
    let camera = try await CameraTest.run(frames: 30)
    if json {
      printJSON(statuses, selfTest, camera)
    } else {
      printTable(statuses, selfTest)
      print(camera.summary)
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
    print(Self.hardwareSummary(NodeElements.hardwareEncoders()))
    print(
      "test pipeline: \(selfTest.framesReceived) frames through VP8 and RTP and back (\(selfTest.caps ?? "no caps"))")
  }

  /// What `revue check` says of the hardware encoders: those found, each with its codec, its
  /// plugin, whether RTP publications use it and the memory it would take without a copy; or
  /// that none of those Revue drives was found.
  static func hardwareSummary(_ found: [NodeElements.HardwareEncoder]) -> String {
    guard !found.isEmpty else {
      return
        "hardware encoders: none found (looked for \(NodeElements.hardwareEncoderFactories.joined(separator: ", "))):"
        + " software encoding"
    }
    return "hardware encoders:\n"
      + found.map { encoder in
        let use =
          encoder.isUsed ? "used for \(encoder.codec.rawValue)" : "not used (REVUE_ENCODER=software, or another first)"
        return
          "  \(encoder.factory)  \(encoder.codec.rawValue)  (\(encoder.plugin ?? "registered by the program"))  \(use)"
          + (encoder.zeroCopyMemory.map { "; zero-copy input \($0), not used yet" } ?? "")
      }.joined(separator: "\n")
  }

  private func printJSON(_ statuses: [NodeElements.Status], _ selfTest: NodeElements.SelfTest, _ camera: CameraTest) {
    let elements: [[String: Any]] = statuses.map { status in
      var entry: [String: Any] = [
        "factory": status.requirement.factory, "purpose": status.requirement.purpose,
        "essential": status.requirement.isEssential, "present": status.isInstalled,
      ]
      if let plugin = status.plugin { entry["plugin"] = plugin }
      if let package = status.package { entry["package"] = package }
      return entry
    }
    let hardware: [[String: Any]] = NodeElements.hardwareEncoders().map { encoder in
      [
        "factory": encoder.factory, "codec": encoder.codec.rawValue, "used": encoder.isUsed,
        "plugin": encoder.plugin as Any? ?? NSNull(), "zeroCopyMemory": encoder.zeroCopyMemory as Any? ?? NSNull(),
      ]
    }
    let object: [String: Any] = [
      "gstreamer": NodeElements.gstreamerVersion, "elements": elements, "hardwareEncoders": hardware,
      "selfTest": ["framesReceived": selfTest.framesReceived, "caps": selfTest.caps as Any? ?? NSNull()],
      "camera": [
        "id": camera.device.id, "name": camera.device.name, "virtual": camera.isVirtual, "frames": camera.frames,
        "width": Int(camera.dimensions?.width ?? 0), "height": Int(camera.dimensions?.height ?? 0),
        "format": camera.format.map(\.description) as Any? ?? NSNull(),
        "firstFrameMilliseconds": camera.firstFrameMilliseconds,
      ],
    ]
    if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
      print(String(decoding: data, as: UTF8.self))
    }
  }
}

/// The camera part of `revue check`: the first camera (the virtual one when the machine has
/// none) turned on through the participant's switch, until it delivered some frames.
struct CameraTest {
  var device: CaptureDevice
  var isVirtual: Bool
  var frames: Int
  var dimensions: Dimensions?
  var format: CaptureFormat?
  /// From `setCamera(enabled: true)` to the first frame at the renderer (the switch's debounce included).
  var firstFrameMilliseconds: Double

  /// One line for the table.
  var summary: String {
    let size = dimensions.map(\.description) ?? "no frame"
    let source = isVirtual ? " (virtual: this machine has no camera)" : ""
    return "camera: \(frames) frames \(size) from \(device.name)\(source), \(format.map { "\($0.encoding)" } ?? "?"), "
      + "first frame \(String(format: "%.0f", firstFrameMilliseconds)) ms after setCamera(enabled: true)"
  }

  /// Captures `frames` frames.
  static func run(frames: Int) async throws -> CameraTest {
    let (device, isVirtual) = try await VirtualDevices.cameraOrVirtual()
    if isVirtual {
      FileHandle.standardError.write(Data("revue: no camera found: using the virtual camera \(device.name)\n".utf8))
    }
    let participant = Room().localParticipant!
    let capturer = participant.cameraTrack.capturer as! CameraCapturer
    _ = try await capturer.set(options: capturer.options.copyWith(device: device))
    let counter = FrameCounter(until: frames)
    participant.cameraTrack.add(videoRenderer: counter)
    let start = ContinuousClock.now
    participant.setCamera(enabled: true)
    let first = await counter.waitForFirst()
    await counter.waitForAll()
    let test = CameraTest(
      device: device, isVirtual: isVirtual, frames: counter.count, dimensions: capturer.dimensions,
      format: capturer.format,
      firstFrameMilliseconds: Double((first - start).components.attoseconds) / 1e15
        + Double((first - start).components.seconds) * 1000)
    try await capturer.stopCapture()
    return test
  }
}

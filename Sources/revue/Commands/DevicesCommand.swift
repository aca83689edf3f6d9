import Foundation
import RevueSDK

/// `revue devices [--json]`: the cameras and microphones GStreamer's device monitor lists
/// (virtual ones too, with `REVUE_VIRTUAL_CAMERAS`), with the formats of each camera and its
/// zoom range, when it has one.
struct DevicesCommand {
  var json: Bool

  func run() async throws {
    try VirtualDevices.enableFromEnvironment()
    let cameras = try await CameraCapturer.captureDevices()
    let microphones = try await MicrophoneCapturer.captureDevices()
    if json {
      let all = (cameras + microphones).map(Self.describe)
      let data = try JSONSerialization.data(withJSONObject: all, options: [.prettyPrinted, .sortedKeys])
      print(String(decoding: data, as: UTF8.self))
    } else {
      print("cameras:")
      if cameras.isEmpty { print("  none") }
      for camera in cameras {
        print(
          "  \(camera.name)  id=\(camera.id)  position=\(camera.position.rawValue)"
            + (camera.isInfrared ? "  (infrared)" : "")
            + (camera.zoomRange.map { "  zoom=\($0.lowerBound)-\($0.upperBound)" } ?? "")
        )
        for line in Self.formatLines(camera.formats) { print("    \(line)") }
      }
      print("microphones:")
      if microphones.isEmpty { print("  none") }
      for microphone in microphones { print("  \(microphone.name)  id=\(microphone.id)") }
    }
    if cameras.isEmpty {
      FileHandle.standardError.write(
        Data(
          "revue: no camera on this machine; set REVUE_VIRTUAL_CAMERAS=all to add the virtual cameras (\(CameraProfile.shippedNames.joined(separator: ", ")))\n"
            .utf8))
    }
  }

  /// One line per encoding and size: `MJPEG 1280x720 @ 30,24,20,15,10,7.5,5 fps`.
  static func formatLines(_ formats: [CaptureFormat]) -> [String] {
    formats.map { "\($0.encoding) \($0.dimensions) @ \($0.frameRates.map(\.description).joined(separator: ",")) fps" }
  }

  static func describe(_ device: CaptureDevice) -> [String: Any] {
    [
      "id": device.id, "name": device.name, "kind": device.kind.rawValue, "position": device.position.rawValue,
      "infrared": device.isInfrared,
      "zoom": device.zoomRange.map { ["min": $0.lowerBound, "max": $0.upperBound] } as Any? ?? NSNull(),
      "formats": device.formats.map { format in
        [
          "encoding": format.encoding.description, "width": Int(format.dimensions.width),
          "height": Int(format.dimensions.height),
          "frameRates": format.frameRates.map { ["min": $0.minimum, "max": $0.maximum] },
        ] as [String: Any]
      },
    ]
  }
}

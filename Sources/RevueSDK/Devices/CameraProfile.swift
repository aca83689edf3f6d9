import Foundation
import GStreamer

/// A camera described in a `.caps` file: a few `key: value` lines (`name`, `position`, `bus`,
/// and `zoom` for a camera with a zoom control),
/// then one caps structure per line, as GStreamer's device monitor reports a V4L2 camera.
/// `#` starts a comment. The virtual cameras are made from these.
public struct CameraProfile: Sendable, Equatable {
  /// The profile's name: its file name without `.caps`, such as `usb-720p-webcam`.
  public var profileName: String
  /// The camera's name, as devices show it.
  public var name: String
  /// Which way the camera faces.
  public var position: CameraPosition
  /// The bus it sits on (`usb`, `platform`…).
  public var bus: String
  /// The formats the camera offers, as caps.
  public var caps: Caps
  /// The camera's own zoom (`zoom: 100-500`), as V4L2 reports `zoom_absolute`; nil when it has none.
  public var zoomRange: ClosedRange<Int>?

  /// Reads a profile from its text.
  /// - Parameters:
  ///   - text: the profile's lines.
  ///   - profileName: the name to give the profile.
  ///   - file: the file named in errors.
  /// - Throws: ``RevueError`` (`.invalidInput`) naming the file, the line and what is wrong.
  public init(parsing text: String, profileName: String, file: String) throws(RevueError) {
    self.profileName = profileName
    var name: String?
    var position = CameraPosition.unspecified
    var bus = ""
    var structures: [Structure] = []
    for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let line =
        rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first
        .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
      guard !line.isEmpty else { continue }
      let place = "\(file):\(index + 1)"
      if line.hasPrefix("video/") || line.hasPrefix("image/") {
        do {
          structures.append(try Structure(line))
        } catch {
          throw RevueError(.invalidInput, "\(place): not a caps structure: \(line)", underlying: error)
        }
        continue
      }
      guard let colon = line.firstIndex(of: ":") else {
        throw RevueError(.invalidInput, "\(place): expected 'key: value' or a caps structure, got '\(line)'")
      }
      let key = line[..<colon].trimmingCharacters(in: .whitespaces)
      let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
      switch key {
      case "name": name = value
      case "bus": bus = value
      case "position":
        guard let parsed = CameraPosition(rawValue: value) else {
          let names = CameraPosition.allCases.map(\.rawValue).joined(separator: ", ")
          throw RevueError(.invalidInput, "\(place): unknown position '\(value)' (one of \(names))")
        }
        position = parsed
      case "zoom":
        let bounds = value.split(separator: "-", omittingEmptySubsequences: false).map {
          Int($0.trimmingCharacters(in: .whitespaces))
        }
        guard bounds.count == 2, let minimum = bounds[0], let maximum = bounds[1], minimum >= 0, minimum < maximum
        else {
          throw RevueError(.invalidInput, "\(place): zoom must be 'MIN-MAX' with 0 ≤ MIN < MAX, got '\(value)'")
        }
        zoomRange = minimum...maximum
      default:
        throw RevueError(.invalidInput, "\(place): unknown key '\(key)' (name, position, bus or zoom)")
      }
    }
    guard let name else { throw RevueError(.invalidInput, "\(file): no 'name:' line") }
    guard !structures.isEmpty else { throw RevueError(.invalidInput, "\(file): no caps lines") }
    self.name = name
    self.position = position
    self.bus = bus
    caps = Caps(structures)
  }

  /// Reads a profile file; its name is the file name without `.caps`.
  /// - Throws: ``RevueError`` when the file cannot be read or is malformed.
  public init(contentsOf url: URL) throws(RevueError) {
    let text: String
    do {
      text = try String(contentsOf: url, encoding: .utf8)
    } catch {
      throw RevueError(.invalidInput, "cannot read camera profile \(url.path)", underlying: error)
    }
    try self.init(parsing: text, profileName: url.deletingPathExtension().lastPathComponent, file: url.path)
  }

  /// The names of the profiles shipped with the SDK.
  public static var shippedNames: [String] { shippedURLs.map { $0.deletingPathExtension().lastPathComponent } }

  /// A shipped profile by name (`usb-720p-webcam`), or any profile by the path of its `.caps` file.
  /// - Throws: ``RevueError`` naming the shipped profiles when there is no such profile.
  public static func named(_ nameOrPath: String) throws(RevueError) -> CameraProfile {
    if nameOrPath.hasSuffix(".caps") { return try CameraProfile(contentsOf: URL(fileURLWithPath: nameOrPath)) }
    guard let url = shippedURLs.first(where: { $0.deletingPathExtension().lastPathComponent == nameOrPath }) else {
      throw RevueError(
        .invalidInput,
        "no camera profile '\(nameOrPath)' (shipped: \(shippedNames.joined(separator: ", ")); or give a .caps path)")
    }
    return try CameraProfile(contentsOf: url)
  }

  private static var shippedURLs: [URL] {
    guard let folder = Bundle.module.resourceURL?.appendingPathComponent("Cameras"),
      let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
    else { return [] }
    return names.filter { $0.hasSuffix(".caps") }.sorted().map { folder.appendingPathComponent($0) }
  }
}

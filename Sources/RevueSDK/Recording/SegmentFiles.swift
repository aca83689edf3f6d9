import Foundation

/// The files of one recording's directory: each segment named by the UTC time its first frame
/// was captured (`2026-12-07T20-05-00Z.mp4`; a second segment that starts in the same second
/// gets `-1`, `-2`…), and the retention rule that deletes the oldest.
struct SegmentFiles: Sendable {
  /// The directory the segments are written in.
  let directory: URL
  /// The extension of the files: `mp4`, `mkv`.
  let fileExtension: String

  /// The path of a new segment that starts at `start`: a name no file in the directory has.
  func path(startingAt start: Date) -> URL {
    let base = Self.name(of: start)
    var candidate = directory.appendingPathComponent("\(base).\(fileExtension)")
    var suffix = 1
    while FileManager.default.fileExists(atPath: candidate.path) {
      candidate = directory.appendingPathComponent("\(base)-\(suffix).\(fileExtension)")
      suffix += 1
    }
    return candidate
  }

  /// `start` as the name of a segment, without its suffix and extension:
  /// `yyyy-MM-ddTHH-mm-ssZ` in UTC (no colons: they are not allowed in every file system).
  static func name(of start: Date) -> String {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: start)
    let two = { (value: Int?) in String(format: "%02d", value ?? 0) }
    return String(format: "%04d", parts.year ?? 0) + "-\(two(parts.month))-\(two(parts.day))T"
      + "\(two(parts.hour))-\(two(parts.minute))-\(two(parts.second))Z"
  }

  /// The start time and order of a file named as a segment of this recording (its suffix
  /// orders segments of one second); nil for any other file, which retention never touches.
  func start(ofFileNamed name: String) -> (date: Date, suffix: Int)? {
    guard name.hasSuffix("." + fileExtension) else { return nil }
    let stem = name.dropLast(fileExtension.count + 1)
    let parts = stem.split(separator: "Z", maxSplits: 1, omittingEmptySubsequences: false)
    guard parts.count == 2, parts[0].count == 19 else { return nil }
    var suffix = 0
    if !parts[1].isEmpty {
      guard parts[1].hasPrefix("-"), let number = Int(parts[1].dropFirst()), number > 0 else { return nil }
      suffix = number
    }
    let fields = parts[0].split(whereSeparator: { "-T".contains($0) }).compactMap { Int($0) }
    guard fields.count == 6 else { return nil }
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    let components = DateComponents(
      year: fields[0], month: fields[1], day: fields[2], hour: fields[3], minute: fields[4], second: fields[5])
    guard let date = calendar.date(from: components), Self.name(of: date) == parts[0] + "Z" else { return nil }
    return (date, suffix)
  }

  /// A segment file in the directory.
  struct File {
    var url: URL
    /// When its first frame was captured (its name).
    var start: Date
    /// The order of segments that start in the same second (its name's suffix).
    var suffix: Int
    /// When it was last written: its last frame.
    var modified: Date
    var bytes: Int64
  }

  /// The segments in the directory, the oldest first.
  func segments() -> [File] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    return names.compactMap { name -> File? in
      guard let (start, suffix) = start(ofFileNamed: name) else { return nil }
      let url = directory.appendingPathComponent(name)
      guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path) else { return nil }
      return File(
        url: url, start: start, suffix: suffix, modified: attributes[.modificationDate] as? Date ?? start,
        bytes: (attributes[.size] as? NSNumber)?.int64Value ?? 0)
    }
    .sorted { ($0.start, $0.suffix) < ($1.start, $1.suffix) }
  }

  /// Deletes the oldest segments the rule lets go, never `current` (the one being written), and
  /// returns them: those whose every frame is older than `age` at `now` (last written before
  /// `now - age`), then the oldest until all of them hold at most `bytes`.
  func applyRetention(age: Duration?, bytes: Int64?, current: URL, now: Date = Date()) -> [URL] {
    let all = segments()
    var doomed = Set<URL>()
    if let age {
      let limit = now.addingTimeInterval(-Double(age.components.seconds) - Double(age.components.attoseconds) / 1e18)
      for segment in all where segment.modified < limit && segment.url != current { doomed.insert(segment.url) }
    }
    if let bytes {
      var total = all.filter { !doomed.contains($0.url) }.reduce(Int64(0)) { $0 + $1.bytes }
      for segment in all where total > bytes && segment.url != current && !doomed.contains(segment.url) {
        doomed.insert(segment.url)
        total -= segment.bytes
      }
    }
    let deleted = all.map(\.url).filter { doomed.contains($0) }
    for url in deleted {
      do {
        try FileManager.default.removeItem(at: url)
      } catch {
        RevueLog.log(.warning, "Recording", "cannot delete the old segment \(url.path): \(error.localizedDescription)")
      }
    }
    return deleted
  }
}

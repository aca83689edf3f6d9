import Foundation
import RevueProcess
import Testing

/// What ffprobe and ffmpeg (not the project's code) read in a media file: its packets, and the
/// sync signal's flashes and beeps.
public enum MediaFileProbe {
  /// One packet of a stream.
  public struct Packet: Sendable, Hashable {
    /// Its presentation time in seconds.
    public var time: Double
    /// Whether it is a keyframe.
    public var isKeyframe: Bool
  }

  /// The packets of the file's first video (`v`) or audio (`a`) stream, in presentation order;
  /// nil when ffprobe cannot read the file.
  public static func packets(_ file: URL, _ stream: String = "v") async throws -> [Packet]? {
    let exit = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/ffprobe"),
      [
        "-v", "error", "-select_streams", "\(stream):0", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
        file.path,
      ],
      within: 30)
    guard exit.status == 0 else { return nil }
    return exit.output.split(separator: "\n").compactMap { line -> Packet? in
      let fields = line.split(separator: ",")
      guard fields.count >= 2, let time = Double(fields[0]) else { return nil }
      return Packet(time: time, isKeyframe: fields[1].hasPrefix("K"))
    }
    .sorted { $0.time < $1.time }
  }

  /// The codec names of the file's streams, in order.
  public static func codecs(_ file: URL) async throws -> [String] {
    let exit = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/ffprobe"),
      ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", file.path], within: 30)
    return exit.output.split(separator: "\n").map { String($0).trimmingCharacters(in: .whitespaces) }
  }

  /// The sync signal's skews in the file: for each flash (a frame whose mean luma jumps above
  /// 200, ffmpeg's `signalstats`) the nearest beep onset (the first millisecond above a tenth
  /// of full scale after at least 0.2 s under it, ffmpeg's `astats`) minus the flash, in
  /// milliseconds, where one is within half a second (a beep in a file's first 0.2 s is not
  /// found). Both are timed as the file times them (`movie`, `amovie`).
  public static func syncSkews(_ file: URL) async throws -> [Double] {
    let video = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/ffprobe"),
      [
        "-v", "error", "-f", "lavfi", "-i", "movie=\(file.path),signalstats", "-show_entries",
        "frame=pts_time:frame_tags=lavfi.signalstats.YAVG", "-of", "csv=p=0",
      ], within: 60)
    var flashes: [Double] = []
    var wasBright = false
    for line in video.output.split(separator: "\n") {
      let fields = line.split(separator: ",")
      guard fields.count >= 2, let time = Double(fields[0]), let luma = Double(fields[1]) else { continue }
      let isBright = luma > 200
      if isBright && !wasBright { flashes.append(time) }
      wasBright = isBright
    }
    // The audio in windows of 1 ms (48 samples at 48 kHz), each with its peak level, timed as
    // the file times it (`amovie`, as `movie` for the frames).
    let audio = try await ChildProcess.run(
      URL(fileURLWithPath: "/usr/bin/ffprobe"),
      [
        "-v", "error", "-f", "lavfi", "-i", "amovie=\(file.path),asetnsamples=n=48:p=0,astats=metadata=1:reset=1",
        "-show_entries", "frame=pts_time:frame_tags=lavfi.astats.Overall.Peak_level", "-of", "csv=p=0",
      ], within: 60)
    var beeps: [Double] = []
    var quietSince: Double? = 0
    for line in audio.output.split(separator: "\n") {
      let fields = line.split(separator: ",")
      guard fields.count >= 2, let time = Double(fields[0]) else { continue }
      let peak = Double(fields[1]) ?? -200  // -inf: digital silence
      if peak > -20 {
        if let since = quietSince, time - since >= 0.2 { beeps.append(time) }
        quietSince = nil
      } else if quietSince == nil {
        quietSince = time
      }
    }
    return flashes.compactMap { flash in
      beeps.min { abs($0 - flash) < abs($1 - flash) }.flatMap { abs($0 - flash) < 0.5 ? ($0 - flash) * 1000 : nil }
    }
  }
}

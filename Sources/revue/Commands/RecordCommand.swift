import Foundation
import RevueCommandLine
import RevueSDK
import Synchronization

/// The recording options every command that records shares (`revue record`, and `--record DIR`
/// on `revue stream`, `receive` and `serve`): where, in which container, how long a segment
/// lasts and what is kept.
struct RecordingArguments: Equatable {
  /// The directory (`--record DIR`, or `revue record`'s `--dir DIR`); nil records nothing.
  var directory: String?
  /// `--format mp4|mkv`; nil: MP4, or Matroska for VP8 (which MP4 does not take).
  var format: RecordingOptions.Format?
  /// `--segment 60s`, in seconds.
  var segmentSeconds = 60
  /// `--keep 24h`, in seconds.
  var keepSeconds: Int?
  /// `--keep-size 2GB`, in bytes.
  var keepBytes: Int64?

  /// The options that name the directory: `--record` (on the other commands) or `--dir`.
  let directoryOptions: Set<String>

  /// Arguments whose directory comes from `directoryOptions`.
  init(directoryOptions: Set<String> = ["--record"]) { self.directoryOptions = directoryOptions }

  /// Takes `option` and its value from `reader` when it is one of the recording's; false when not.
  mutating func take(_ option: String, from reader: inout OptionReader) throws(UsageError) -> Bool {
    switch option {
    case _ where directoryOptions.contains(option): directory = try reader.value(option)
    case "--format":
      let text = try reader.value(option)
      guard let format = RecordingOptions.Format(rawValue: text) else {
        throw reader.error("--format is mp4 or mkv, not '\(text)'")
      }
      self.format = format
    case "--segment":
      let text = try reader.value(option)
      guard let seconds = Self.seconds(text), seconds >= 1 else {
        throw reader.error("--segment is a duration of at least 1 s, such as 60s, 10m or 1h, not '\(text)'")
      }
      segmentSeconds = seconds
    case "--keep":
      let text = try reader.value(option)
      guard let seconds = Self.seconds(text), seconds >= 1 else {
        throw reader.error("--keep is a duration, such as 24h, 7d or 90m, not '\(text)'")
      }
      keepSeconds = seconds
    case "--keep-size":
      let text = try reader.value(option)
      guard let bytes = Self.bytes(text), bytes > 0 else {
        throw reader.error("--keep-size is a size, such as 2GB, 500MB or 100000000, not '\(text)'")
      }
      keepBytes = bytes
    default: return false
    }
    return true
  }

  /// Checks that the options that shape a recording come with its directory.
  func validate(_ command: String) throws(UsageError) {
    let given = [
      ("--format", format != nil), ("--segment", segmentSeconds != 60), ("--keep", keepSeconds != nil),
      ("--keep-size", keepBytes != nil),
    ].filter(\.1).map(\.0)
    if directory == nil, let first = given.first {
      throw UsageError(
        description: "\(command): \(first) goes with \(directoryOptions.sorted().joined(separator: " or ")) DIR")
    }
  }

  /// The SDK's options for video in `codec` at `encoding`.
  func options(codec: VideoCodec = .h264, encoding: VideoEncoding? = nil) -> RecordingOptions? {
    guard let directory else { return nil }
    return RecordingOptions(
      directory: URL(fileURLWithPath: directory), format: format ?? (codec == .vp8 ? .mkv : .mp4),
      segmentDuration: .seconds(segmentSeconds),
      keepFor: keepSeconds.map { .seconds($0) }, keepBytes: keepBytes, codec: codec, encoding: encoding)
  }

  /// `90`, `90s`, `10m`, `24h` or `7d` in seconds; nil for anything else.
  static func seconds(_ text: String) -> Int? {
    let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
    guard let last = text.last else { return nil }
    let (number, unit) = units[last].map { (text.dropLast(), $0) } ?? (Substring(text), 1)
    guard let value = Int(number), value >= 0 else { return nil }
    let (seconds, overflow) = value.multipliedReportingOverflow(by: unit)
    return overflow ? nil : seconds
  }

  /// `2GB`, `500MB`, `64KB`, `1.5G` or a number of bytes (powers of 1000; `GiB`, `MiB` and
  /// `KiB` are powers of 1024); nil for anything else.
  static func bytes(_ text: String) -> Int64? {
    let units: [(String, Double)] = [
      ("GiB", 1_073_741_824), ("MiB", 1_048_576), ("KiB", 1024), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3), ("G", 1e9),
      ("M", 1e6), ("K", 1e3), ("B", 1),
    ]
    let (number, unit) =
      units.first { text.uppercased().hasSuffix($0.0.uppercased()) }.map { (text.dropLast($0.0.count), $0.1) }
      ?? (Substring(text), 1)
    guard let value = Double(number), value.isFinite, value >= 0, value * unit < 9e18 else { return nil }
    return Int64(value * unit)
  }

  /// Says on standard error what the recording does as it does it (each segment started or
  /// deleted, a fault), until it ends; returns the task that does.
  static func report(_ recording: Recording) -> Task<Void, Never> {
    let events = recording.events
    return Task.detached {
      for await event in events {
        let line: String
        switch event {
        case .segmentStarted(let segment):
          line = "revue: segment \(segment.index) started \(Self.timestamp(segment.start)) \(segment.url.path)"
        case .segmentDeleted(let url): line = "revue: segment deleted \(url.path)"
        case .fault(let fault) where fault.severity == .error: line = "revue: the recording failed: \(fault)"
        case .fault(let fault): line = "revue: the recording warns: \(fault)"
        case .state: continue
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
      }
    }
  }

  /// `date` in ISO 8601, UTC, to the millisecond.
  static func timestamp(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: date)
  }

  /// Starts recording what `publication` sends (its encoded frames) and `audio`, when a
  /// directory was given, and says so; the session's ``RecordingSession/finish()`` stops it.
  func record(_ publication: LocalTrackPublication, audio: LocalAudioTrack?) throws -> RecordingSession? {
    guard let options = options(codec: publication.codec ?? .h264) else { return nil }
    return try start("the stream", audio: audio != nil, options) {
      try Recording(publication: publication, audio: audio, options: options)
    }
  }

  /// Starts recording what `broadcast` serves, as its encoder made it (the camera encoded once;
  /// Matroska for VP8), and its Opus or `audio` (encoded in AAC for MP4), when a directory was
  /// given, and says so.
  func record(_ broadcast: WebRTCBroadcast, audio: LocalAudioTrack?) throws -> RecordingSession? {
    guard let options = options(codec: broadcast.codec) else { return nil }
    return try start("what is served to WebRTC viewers", audio: audio != nil, options) {
      try Recording(broadcast: broadcast, audio: audio, options: options)
    }
  }

  /// Starts recording `track` and `audio` with an encoder of the recording's own (H.264 at
  /// `encoding`), when a directory was given, and says so.
  func record(_ track: LocalVideoTrack, audio: LocalAudioTrack?, encoding: VideoEncoding) throws -> RecordingSession? {
    guard let options = options(codec: .h264, encoding: encoding) else { return nil }
    return try start("the camera", audio: audio != nil, options) {
      try Recording(track: track, audio: audio, options: options)
    }
  }

  /// Starts recording a received stream as it came (Matroska unless `--format` says), when a
  /// directory was given, and says so.
  func record(receiving video: RemoteVideoTrack, audio: RemoteAudioTrack?) throws -> RecordingSession? {
    guard var options = options(codec: video.codec) else { return nil }
    if format == nil { options.format = .mkv }
    return try start("the stream as it comes", audio: audio != nil, options) {
      try Recording(receiving: video, audio: audio, options: options)
    }
  }

  /// Starts the recording `make` makes of `what`, says so, and reports its events.
  private func start(
    _ what: String, audio: Bool, _ options: RecordingOptions, _ make: () throws -> Recording
  ) throws -> RecordingSession {
    Self.survivesFileSizeLimits()
    let recording = try make()
    FileHandle.standardError.write(
      Data(
        ("revue: recording \(what)\(audio ? " with audio" : "") to \(options.directory.path) in"
          + " \(segmentSeconds) s segments (\(options.format.rawValue))\n").utf8))
    return RecordingSession(recording: recording, reporter: Self.report(recording))
  }

  /// A file size limit (`ulimit -f`) fails the file's writes (`EFBIG`) instead of killing the
  /// process (`SIGXFSZ`): the recording ends with an event, and what else runs goes on.
  static func survivesFileSizeLimits() { signal(SIGXFSZ, SIG_IGN) }
}

/// A recording beside a stream, and the task that reports its events.
struct RecordingSession {
  let recording: Recording
  let reporter: Task<Void, Never>

  /// Stops the recording (its last segment finished) and its reports.
  func finish() async {
    await recording.stop()
    await reporter.value
  }
}

/// `revue record` options.
struct RecordOptions: Equatable {
  var source = StreamOptions.Source.firstCamera
  var size = Dimensions.h720_169
  var fps = 30
  var codec = VideoCodec.h264
  var bitrate: Int?
  var audio = false
  var duration: Int?
  var json = false
  var recording = RecordingArguments(directoryOptions: ["--dir"])

  /// Parses `revue record`'s options; nil for `--help`.
  static func parse(_ arguments: [String]) throws(UsageError) -> RecordOptions? {
    var options = RecordOptions()
    var reader = OptionReader(command: "record", arguments)
    var codecGiven = false
    while let option = reader.next() {
      switch option {
      case "--camera": options.source = .camera(try reader.value(option))
      case "--virtual-camera": options.source = .virtualCamera(try reader.value(option))
      case "--test-pattern": options.source = .testPattern
      case "--size": options.size = try reader.size(option)
      case "--fps": options.fps = try reader.count(option)
      case "--codec":
        options.codec = try reader.codec(option)
        codecGiven = true
      case "--bitrate": options.bitrate = try reader.count(option)
      case "--audio": options.audio = true
      case "--duration": options.duration = try reader.count(option)
      case "--json": options.json = true
      case "--help", "-h": return nil
      default:
        guard try options.recording.take(option, from: &reader) else { throw reader.unknown(option) }
      }
    }
    guard options.recording.directory != nil else { throw reader.error("--dir DIR is required") }
    if codecGiven && options.codec == .vp8 && options.recording.format == .mp4 {
      throw reader.error("vp8 is recorded with --format mkv (MP4 takes h264)")
    }
    return options
  }
}

/// `revue record`: a camera (or the test pattern), with its microphone when asked, recorded to
/// segment files until Ctrl-C, the duration, or a write error.
struct RecordCommand {
  var options: RecordOptions

  func run() async throws {
    RecordingArguments.survivesFileSizeLimits()
    let device = try await StreamCommand.pickCamera(options.source)
    let (track, capturer, size, encoding) = try await StreamCommand.startCamera(
      device, size: options.size, fps: options.fps, bitrate: options.bitrate)
    let microphone = options.audio ? try await StreamCommand.startMicrophone(for: options.source) : nil
    let recording: Recording
    do {
      recording = try Recording(
        track: track, audio: microphone,
        options: options.recording.options(codec: options.codec, encoding: encoding)!)
    } catch {
      try await capturer.stopCapture()
      try await microphone?.capturer?.stopCapture()
      throw error
    }
    let reporter = RecordingArguments.report(recording)
    FileHandle.standardError.write(
      Data(
        ("revue: recording \(device.name) \(size) \(recording.codec)\(microphone == nil ? "" : " with audio") to"
          + " \(recording.options.directory.path) in \(options.recording.segmentSeconds) s segments"
          + " (\(recording.options.format.rawValue))\n").utf8))
    let printer = StatusPrinter(json: options.json)
    let lastFrames = PreviousCount()
    let failed = { @Sendable () -> Bool in if case .failed = recording.state { true } else { false } }
    await RunLoopControl.run(duration: options.duration, done: failed) {
      let stats = recording.statistics
      let fps = lastFrames.advance(to: stats.framesRecorded)
      printer.print(
        [("framesRecorded", stats.framesRecorded), ("fps", fps), ("segments", stats.segmentsStarted)],
        text: "\(fps) fps  frames \(stats.framesRecorded)  segments \(stats.segmentsStarted)")
    }
    printer.finish()
    await recording.stop()
    await reporter.value
    try await capturer.stopCapture()
    try await microphone?.capturer?.stopCapture()
    let final = recording.statistics
    FileHandle.standardError.write(
      Data(
        ("revue: recorded \(final.framesRecorded) frames in \(final.segmentsStarted) segments"
          + (final.segmentsDeleted > 0 ? " (\(final.segmentsDeleted) old ones deleted)" : "") + "\n").utf8))
    if case .failed(let fault) = recording.state {
      throw RevueError(.invalidState, "the recording failed: \(fault)")
    }
  }
}

import GStreamer

/// Interleaved PCM audio: the seeds' `AVAudioPCMBuffer` on Linux. The samples live in a
/// GStreamer buffer, so passing audio along never copies it.
public struct AudioPCMBuffer: Sendable {
  /// The sample format.
  public enum Format: Sendable, Hashable {
    /// Signed 16-bit integers.
    case int16
    /// 32-bit floats, nominally −1…1.
    case float32

    /// The bytes of one sample.
    public var bytesPerSample: Int { self == .int16 ? 2 : 4 }
    /// GStreamer's name (native-endian little-endian on Linux machines).
    var gstreamerName: String { self == .int16 ? "S16LE" : "F32LE" }
  }

  /// Samples per second per channel.
  public let sampleRate: Int
  /// The number of channels, interleaved.
  public let channelCount: Int
  /// The sample format.
  public let format: Format
  /// The number of frames (one sample per channel each).
  public let frameLength: Int
  /// The GStreamer buffer that holds the samples.
  public let buffer: Buffer

  /// The highest sample rate accepted.
  public static let maximumSampleRate = 768_000
  /// The most channels accepted (GStreamer's limit).
  public static let maximumChannels = 64

  /// Audio made from interleaved bytes the caller owns, copied once.
  /// - Throws: ``MediaBufferError`` when the rate or channel count is impossible or the byte
  ///   count is not `frameLength × channelCount × bytesPerSample`.
  public init(
    sampleRate: Int, channelCount: Int, format: Format, frameLength: Int, bytes: UnsafeRawBufferPointer
  ) throws(MediaBufferError) {
    try Self.check(sampleRate: sampleRate, channelCount: channelCount, frameLength: frameLength)
    // The frame length is the caller's: its byte count may not fit in an Int (fuzzing found it).
    let (expected, overflow) = frameLength.multipliedReportingOverflow(by: channelCount * format.bytesPerSample)
    guard !overflow, bytes.count == expected else {
      throw MediaBufferError(
        "\(frameLength) frames of \(channelCount) \(format) channels take \(overflow ? "more than \(Int.max)" : "\(expected)")"
          + " bytes, not \(bytes.count)")
    }
    self.init(
      sampleRate: sampleRate, channelCount: channelCount, format: format, frameLength: frameLength,
      buffer: Buffer(copying: bytes))
  }

  /// 16-bit audio from interleaved samples.
  /// - Throws: ``MediaBufferError`` when the sample count is not a whole number of frames.
  public init(sampleRate: Int, channelCount: Int, samples: [Int16]) throws(MediaBufferError) {
    try self.init(sampleRate: sampleRate, channelCount: channelCount, format: .int16, samples: samples)
  }

  /// Float audio from interleaved samples.
  /// - Throws: ``MediaBufferError`` when the sample count is not a whole number of frames.
  public init(sampleRate: Int, channelCount: Int, samples: [Float]) throws(MediaBufferError) {
    try self.init(sampleRate: sampleRate, channelCount: channelCount, format: .float32, samples: samples)
  }

  private init<Sample>(sampleRate: Int, channelCount: Int, format: Format, samples: [Sample]) throws(MediaBufferError) {
    guard channelCount > 0, samples.count % channelCount == 0 else {
      throw MediaBufferError("\(samples.count) samples are not a whole number of \(channelCount)-channel frames")
    }
    let result = samples.withUnsafeBytes { raw in
      Result { () throws(MediaBufferError) in
        try AudioPCMBuffer(
          sampleRate: sampleRate, channelCount: channelCount, format: format,
          frameLength: samples.count / channelCount, bytes: raw)
      }
    }
    self = try result.get()
  }

  /// Audio over a GStreamer buffer, without copying.
  /// - Throws: ``MediaBufferError`` when the buffer's size is not a whole number of frames.
  public init(wrapping buffer: Buffer, sampleRate: Int, channelCount: Int, format: Format) throws(MediaBufferError) {
    // The rate and channels first: the frame's size is only computed for a channel count that is
    // possible (fuzzing found an overflow).
    try Self.check(sampleRate: sampleRate, channelCount: channelCount, frameLength: 1)
    let frameBytes = channelCount * format.bytesPerSample
    guard buffer.size % frameBytes == 0 else {
      throw MediaBufferError("\(buffer.size) bytes are not a whole number of \(channelCount)-channel \(format) frames")
    }
    try Self.check(sampleRate: sampleRate, channelCount: channelCount, frameLength: buffer.size / frameBytes)
    self.init(
      sampleRate: sampleRate, channelCount: channelCount, format: format, frameLength: buffer.size / frameBytes,
      buffer: buffer)
  }

  private init(sampleRate: Int, channelCount: Int, format: Format, frameLength: Int, buffer: Buffer) {
    self.sampleRate = sampleRate
    self.channelCount = channelCount
    self.format = format
    self.frameLength = frameLength
    self.buffer = buffer
  }

  private static func check(sampleRate: Int, channelCount: Int, frameLength: Int) throws(MediaBufferError) {
    guard sampleRate > 0, sampleRate <= maximumSampleRate else {
      throw MediaBufferError("a sample rate of \(sampleRate) Hz is outside 1…\(maximumSampleRate)")
    }
    guard channelCount > 0, channelCount <= maximumChannels else {
      throw MediaBufferError("\(channelCount) channels is outside 1…\(maximumChannels)")
    }
    guard frameLength > 0 else { throw MediaBufferError("an audio buffer needs at least one frame") }
  }

  /// The caps that describe this audio.
  public var caps: Caps {
    let mask =
      channelCount > 2
      ? ", channel-mask=(bitmask)0x" + String(AudioChannels.fallbackMask(channels: channelCount), radix: 16) : ""
    // The fields are all valid by construction, so the caps always parse.
    return try! Caps(
      "audio/x-raw, format=\(format.gstreamerName), layout=interleaved, rate=\(sampleRate), channels=\(channelCount)\(mask)"
    )
  }

  /// The capture time of the first sample on the monotonic clock (`CLOCK_MONOTONIC`,
  /// GStreamer's system clock), nil when not set. Microphone audio carries it.
  public var timestamp: ClockTime? { buffer.pts }

  /// The same audio (its memory shared) timed `timestamp`.
  func timed(_ timestamp: ClockTime) -> AudioPCMBuffer {
    var buffer = buffer
    buffer.pts = timestamp
    return AudioPCMBuffer(
      sampleRate: sampleRate, channelCount: channelCount, format: format, frameLength: frameLength, buffer: buffer)
  }

  /// The duration of the audio.
  public var duration: ClockTime { ClockTime(nanoseconds: UInt64(frameLength) * 1_000_000_000 / UInt64(sampleRate)) }

  /// A copy of the samples as 16-bit integers (nil for float audio).
  public var int16Samples: [Int16]? {
    guard format == .int16 else { return nil }
    return try? buffer.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
  }

  /// A copy of the samples as floats (nil for 16-bit audio).
  public var floatSamples: [Float]? {
    guard format == .float32 else { return nil }
    return try? buffer.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
  }
}

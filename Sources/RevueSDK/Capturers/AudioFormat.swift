import GStreamer

/// The format of an audio track.
public struct AudioFormat: Sendable, Hashable {
  /// Samples per second.
  public var sampleRate: Int
  /// Channels.
  public var channelCount: Int
  /// The sample format.
  public var sampleFormat: AudioPCMBuffer.Format

  /// A format of `sampleRate` Hz, `channelCount` channels of `sampleFormat` samples.
  public init(sampleRate: Int, channelCount: Int, sampleFormat: AudioPCMBuffer.Format) {
    self.sampleRate = sampleRate
    self.channelCount = channelCount
    self.sampleFormat = sampleFormat
  }

  /// 48 kHz, stereo, 16-bit: what Opus encodes.
  public static let standard = AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16)

  /// The caps of this format.
  var caps: Caps {
    // The fields are all valid by construction, so the caps always parse.
    try! Caps(
      "audio/x-raw, format=\(sampleFormat.gstreamerName), layout=interleaved, rate=\(sampleRate), channels=\(channelCount)"
    )
  }
}

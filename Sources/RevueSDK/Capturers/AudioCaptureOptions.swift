/// What the microphone captures and how its voice is processed (`webrtcdsp`).
///
/// The flags follow VideoSDK's NoiseConfig: a flag left out is on, except ``highpassFilter``,
/// which is off; a flag given as nil takes the preset's value (``Preset/processesVoice``, and off
/// for the high-pass filter). ``preset(_:device:)`` takes every flag from the preset.
public struct AudioCaptureOptions: Sendable, Hashable {
  /// VideoSDK's microphone presets: channels, bitrate, and whether voice processing is on.
  public enum Preset: String, Sendable, Hashable, CaseIterable {
    /// Mono, 24 kbps, processing on.
    case speechLowQuality = "speech_low_quality"
    /// Mono, 24 kbps, processing on (the default).
    case speechStandard = "speech_standard"
    /// Mono, 40 kbps, processing off.
    case musicStandard = "music_standard"
    /// Stereo, 64 kbps, processing off.
    case standardStereo = "standard_stereo"
    /// Mono, 128 kbps, processing off.
    case highQuality = "high_quality"
    /// Stereo, 192 kbps, processing off.
    case highQualityStereo = "high_quality_stereo"

    /// 1 or 2.
    public var channelCount: Int {
      switch self {
      case .standardStereo, .highQualityStereo: 2
      default: 1
      }
    }

    /// The bitrate the preset encodes at, in bits per second.
    public var bitrate: Int {
      switch self {
      case .speechLowQuality, .speechStandard: 24_000
      case .musicStandard: 40_000
      case .standardStereo: 64_000
      case .highQuality: 128_000
      case .highQualityStereo: 192_000
      }
    }

    /// Whether noise suppression, echo cancellation and auto gain are on by default.
    public var processesVoice: Bool { self == .speechLowQuality || self == .speechStandard }
  }

  /// A specific microphone; nil for the first one.
  public let device: CaptureDevice?
  /// The preset: channels, bitrate, and the flags' values when given as nil.
  public let preset: Preset
  /// Echo cancellation, or nil for the preset's value.
  public let echoCancellation: Bool?
  /// Noise suppression, or nil for the preset's value.
  public let noiseSuppression: Bool?
  /// Automatic gain control, or nil for the preset's value.
  public let autoGainControl: Bool?
  /// The high-pass filter, or nil for the preset's value (off).
  public let highpassFilter: Bool?

  /// Options whose flags default as VideoSDK's NoiseConfig: echo cancellation, noise suppression
  /// and auto gain on, high-pass off; nil takes the preset's value.
  public init(
    device: CaptureDevice? = nil, preset: Preset = .speechStandard, echoCancellation: Bool? = true,
    noiseSuppression: Bool? = true, autoGainControl: Bool? = true, highpassFilter: Bool? = false
  ) {
    self.device = device
    self.preset = preset
    self.echoCancellation = echoCancellation
    self.noiseSuppression = noiseSuppression
    self.autoGainControl = autoGainControl
    self.highpassFilter = highpassFilter
  }

  /// Every flag from `preset` (VideoSDK's "noiseConfig nil").
  public static func preset(_ preset: Preset, device: CaptureDevice? = nil) -> AudioCaptureOptions {
    AudioCaptureOptions(
      device: device, preset: preset, echoCancellation: nil, noiseSuppression: nil, autoGainControl: nil,
      highpassFilter: nil)
  }

  /// The processing that runs: each flag, or the preset's value.
  public var processing: Processing {
    Processing(
      echoCancellation: echoCancellation ?? preset.processesVoice,
      noiseSuppression: noiseSuppression ?? preset.processesVoice,
      autoGainControl: autoGainControl ?? preset.processesVoice, highpassFilter: highpassFilter ?? false)
  }

  /// The voice processing in effect.
  public struct Processing: Sendable, Hashable {
    /// Echo cancellation.
    public var echoCancellation: Bool
    /// Noise suppression.
    public var noiseSuppression: Bool
    /// Automatic gain control.
    public var autoGainControl: Bool
    /// The high-pass filter.
    public var highpassFilter: Bool

    /// Processing with each flag as given.
    public init(echoCancellation: Bool, noiseSuppression: Bool, autoGainControl: Bool, highpassFilter: Bool) {
      self.echoCancellation = echoCancellation
      self.noiseSuppression = noiseSuppression
      self.autoGainControl = autoGainControl
      self.highpassFilter = highpassFilter
    }

    /// Whether anything is on (then `webrtcdsp` runs).
    public var isEnabled: Bool { echoCancellation || noiseSuppression || autoGainControl || highpassFilter }
  }
}

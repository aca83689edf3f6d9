/// The encoding of a custom microphone track (seed 002's table): channels, bitrate, and whether
/// noise suppression, echo cancellation and auto gain are on unless ``NoiseConfig`` says otherwise.
/// RevueSDK's `AudioCaptureOptions.Preset` holds the values.
public enum CustomMicrophoneTrackConfig: String, Sendable, Hashable, CaseIterable {
  /// Mono, 24 kbps, processing on.
  case speech_low_quality
  /// Mono, 24 kbps, processing on (the default).
  case speech_standard
  /// Mono, 40 kbps, processing off.
  case music_standard
  /// Stereo, 64 kbps, processing off.
  case standard_stereo
  /// Mono, 128 kbps, processing off.
  case high_quality
  /// Stereo, 192 kbps, processing off.
  case high_quality_stereo

  /// RevueSDK's preset of the same name.
  public var preset: AudioCaptureOptions.Preset {
    switch self {
    case .speech_low_quality: .speechLowQuality
    case .speech_standard: .speechStandard
    case .music_standard: .musicStandard
    case .standard_stereo: .standardStereo
    case .high_quality: .highQuality
    case .high_quality_stereo: .highQualityStereo
    }
  }

  /// 1 (mono) or 2 (stereo).
  public var channelCount: Int { preset.channelCount }

  /// The bitrate, in bits per second.
  public var bitrate: Int { preset.bitrate }

  /// Whether noise suppression, echo cancellation and auto gain are on by default.
  public var processesVoice: Bool { preset.processesVoice }
}

/// The voice processing of a custom microphone track (`webrtcdsp` on Linux).
///
/// A flag left out is on, except ``highPassFilter``, which is off; a flag given as nil keeps the
/// value of the track's ``CustomMicrophoneTrackConfig`` (off for the high-pass filter). RevueSDK's
/// `AudioCaptureOptions` applies these rules.
public struct NoiseConfig: Sendable, Hashable {
  /// Noise suppression, or nil for the encoder config's value.
  public var noiseSuppression: Bool?
  /// Echo cancellation, or nil for the encoder config's value.
  public var echoCancellation: Bool?
  /// Automatic gain control, or nil for the encoder config's value.
  public var autoGainControl: Bool?
  /// The high-pass filter, or nil for the encoder config's value (off).
  public var highPassFilter: Bool?

  /// A configuration whose flags left out are on, except the high-pass filter.
  public init(
    noiseSuppression: Bool? = true, echoCancellation: Bool? = true, autoGainControl: Bool? = true,
    highPassFilter: Bool? = false
  ) {
    self.noiseSuppression = noiseSuppression
    self.echoCancellation = echoCancellation
    self.autoGainControl = autoGainControl
    self.highPassFilter = highPassFilter
  }
}

extension AudioCaptureOptions {
  /// The options of a custom microphone track: `noiseConfig`'s flags over `encoderConfig`'s
  /// (every flag from `encoderConfig` when `noiseConfig` is nil): what `createMicrophoneAudioTrack`
  /// opens the microphone with, for RevueSDK code that sets the microphone itself.
  public init(device: CaptureDevice?, encoderConfig: CustomMicrophoneTrackConfig, noiseConfig: NoiseConfig?) {
    guard let noiseConfig else {
      self = .preset(encoderConfig.preset, device: device)
      return
    }
    self.init(
      device: device, preset: encoderConfig.preset, echoCancellation: noiseConfig.echoCancellation,
      noiseSuppression: noiseConfig.noiseSuppression, autoGainControl: noiseConfig.autoGainControl,
      highpassFilter: noiseConfig.highPassFilter)
  }
}

/// The profile of a custom screen share track (seed 002's table): frame rate and bitrate, and the
/// size the screen is scaled to. RevueSDK's screen share profile, under VideoSDK's name.
public typealias CustomScreenShareTrackConfig = ScreenShareCaptureOptions.Profile

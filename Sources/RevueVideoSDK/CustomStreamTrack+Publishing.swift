/// What a publication of a custom track uses: the settings it was made with, in RevueSDK's terms.
extension CustomStreamTrack {
  /// The resolution asked for: the camera config's or the screen share profile's; nil for a
  /// microphone track.
  public var dimensions: Dimensions? {
    switch encoderConfig {
    case .camera(let config): config.dimensions
    case .screenShare(let config): config.dimensions
    case .microphone: nil
    }
  }

  /// The most the full-size layer sends: the camera config's bitrate in ``bitrateMode`` at 30 fps,
  /// or the screen share profile's bitrate and frame rate; nil for a microphone track.
  public var videoEncoding: VideoEncoding? {
    switch encoderConfig {
    case .camera(let config): config.encoding(for: bitrateMode ?? .BALANCED)
    case .screenShare(let config): VideoEncoding(maxBitrate: config.bitrate, maxFps: config.fps)
    case .microphone: nil
    }
  }

  /// How many layers the video is sent in, at most: 1 without ``multiStream``; with it, 2 or 3 as
  /// ``maxLayer`` says for a camera, 3 for a screen share. 0 for a microphone track. RevueSDK
  /// sends fewer for small sizes (`VideoPublishOptions.layers(for:)`).
  public var layerCount: Int {
    switch encoderConfig {
    case .microphone: 0
    case .camera: multiStream ? (maxLayer ?? .MAX_LAYER_3).rawValue : 1
    case .screenShare: multiStream ? 3 : 1
    }
  }

  /// The publish options of the video: ``videoEncoding``, the layers, the codec and bitrate mode;
  /// nil for a microphone track.
  public var videoPublishOptions: VideoPublishOptions? {
    guard let encoding = videoEncoding else { return nil }
    return VideoPublishOptions(
      encoding: encoding, simulcast: multiStream, maxLayer: layerCount == 2 ? .maxLayer2 : .maxLayer3,
      preferredCodec: (codec ?? .VP8).revue, bitrateMode: (bitrateMode ?? .BALANCED).revue)
  }

  /// The publish options of the audio: the microphone config's bitrate; nil for the other tracks.
  public var audioPublishOptions: AudioPublishOptions? {
    guard case .microphone(let config) = encoderConfig else { return nil }
    return AudioPublishOptions(encoding: AudioEncoding(maxBitrate: config.bitrate))
  }

  /// The capture options of RevueSDK's screen share track for a screen share track's profile;
  /// nil for the other tracks.
  public var screenShareOptions: ScreenShareCaptureOptions? {
    guard case .screenShare(let profile) = encoderConfig else { return nil }
    return ScreenShareCaptureOptions(profile: profile)
  }
}

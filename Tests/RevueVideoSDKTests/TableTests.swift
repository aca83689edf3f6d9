import RevueTestSupport
import RevueVideoSDK
import Testing

/// The seed's tables and rules, without devices.
@Suite(.tier(.unit), .sharedProcess) struct TableTests {
  @Test func cameraConfigsHaveTheSeedsResolutionsAndBitrates() {
    let table = CustomCameraTrackConfig.allCases.map { config in
      let size = config.dimensions
      let kbps = [RevueVideoSDK.BitrateMode.BANDWIDTH_OPTIMIZED, .BALANCED, .HIGH_QUALITY].map { config.kbps(for: $0) }
      return
        "\(config.rawValue) \(size.width)x\(size.height) \(config.frameRate) \(kbps.map(String.init).joined(separator: " "))"
    }
    #expect(
      table == [
        "h90p_w160p 160x90 30 40 90 120",
        "h180p_w320p 320x180 30 60 120 180",
        "h360p_w640p 640x360 30 300 450 600",
        "h540p_w960p 960x540 30 600 900 1200",
        "h720p_w1280p 1280x720 30 1000 1500 2000",
        "h1080p_w1920p 1920x1080 30 1500 2200 2700",
        "h120p_w160p 160x120 30 40 90 120",
        "h180p_w240p 240x180 30 90 120 180",
        "h240p_w320p 320x240 30 100 150 200",
        "h360p_w480p 480x360 30 270 360 540",
        "h480p_w640p 640x480 30 350 600 900",
        "h720p_w960p 960x720 30 900 1200 1600",
        "h1080p_w1440p 1440x1080 30 1500 2000 2700",
      ])
    #expect(
      CustomCameraTrackConfig.h720p_w960p.encoding(for: .HIGH_QUALITY)
        == VideoEncoding(maxBitrate: 1_600_000, maxFps: 30))
  }

  @Test func microphoneConfigsHaveTheSeedsChannelsBitratesAndProcessing() {
    let table = CustomMicrophoneTrackConfig.allCases.map {
      "\($0.rawValue) \($0.channelCount == 1 ? "Mono" : "Stereo") \($0.bitrate / 1000) \($0.processesVoice ? "On" : "Off")"
    }
    #expect(
      table == [
        "speech_low_quality Mono 24 On", "speech_standard Mono 24 On", "music_standard Mono 40 Off",
        "standard_stereo Stereo 64 Off", "high_quality Mono 128 Off", "high_quality_stereo Stereo 192 Off",
      ])
  }

  @Test func noiseConfigFollowsTheSeedsDefaults() {
    typealias Processing = AudioCaptureOptions.Processing
    func processing(_ config: CustomMicrophoneTrackConfig, _ noise: NoiseConfig?) -> Processing {
      AudioCaptureOptions(device: nil, encoderConfig: config, noiseConfig: noise).processing
    }
    // A flag left out is on, except the high-pass filter: whatever the encoder config.
    #expect(
      processing(.music_standard, NoiseConfig())
        == Processing(echoCancellation: true, noiseSuppression: true, autoGainControl: true, highpassFilter: false))
    // nil keeps the encoder config's value (off for the high-pass filter).
    #expect(
      processing(.music_standard, NoiseConfig(noiseSuppression: nil, echoCancellation: nil, highPassFilter: nil))
        == Processing(echoCancellation: false, noiseSuppression: false, autoGainControl: true, highpassFilter: false))
    #expect(
      processing(.speech_standard, NoiseConfig(noiseSuppression: false, echoCancellation: nil, autoGainControl: nil))
        == Processing(echoCancellation: true, noiseSuppression: false, autoGainControl: true, highpassFilter: false))
    #expect(processing(.speech_standard, NoiseConfig(highPassFilter: true)).highpassFilter)
    // No noise config: every flag from the encoder config.
    #expect(
      processing(.speech_low_quality, nil)
        == Processing(echoCancellation: true, noiseSuppression: true, autoGainControl: true, highpassFilter: false))
    #expect(!processing(.high_quality_stereo, nil).isEnabled)
    #expect(
      AudioCaptureOptions(device: nil, encoderConfig: .standard_stereo, noiseConfig: nil).preset == .standardStereo)
  }

  @Test func screenShareProfilesHaveTheSeedsFrameRatesAndBitrates() {
    let table = CustomScreenShareTrackConfig.allCases.map { "\($0.rawValue) \($0.fps) \($0.bitrate / 1000)" }
    #expect(
      table == [
        "h360p_30fps 30 400", "h480p_15fps 15 300", "h480p_30fps 30 500", "h720p_5fps 5 400", "h720p_15fps 15 1000",
        "h720p_30fps 30 1500", "h1080p_15fps 15 1500", "h1080p_30fps 30 2000",
      ])
  }

  /// The settings of the seed's screen share example (RoomTests shares the screen with them).
  @Test func screenShareTrackHoldsOnlyItsSettings() {
    let shareTrack = VideoSDK.createScreenShareVideoTrack(
      encoderConfig: .h1080p_15fps,
      multiStream: false
    )
    #expect(shareTrack.videoTrack == nil && shareTrack.audioTrack == nil)
    #expect(shareTrack.encoderConfig == .screenShare(.h1080p_15fps))
    #expect(shareTrack.videoEncoding == VideoEncoding(maxBitrate: 1_500_000, maxFps: 15))
    #expect(shareTrack.screenShareOptions?.dimensions == Dimensions(width: 1920, height: 1080))
    #expect(shareTrack.screenShareOptions?.fps == 15)
    #expect(shareTrack.layerCount == 1 && shareTrack.videoPublishOptions?.simulcast == false)
    #expect(!shareTrack.isEnded && shareTrack.codec == nil && shareTrack.facingMode == nil)

    let defaults = VideoSDK.createScreenShareVideoTrack()
    #expect(defaults.encoderConfig == .screenShare(.h720p_15fps) && !defaults.multiStream && !defaults.withAudio)
    #expect(defaults.videoEncoding == VideoEncoding(maxBitrate: 1_000_000, maxFps: 15))
    let layered = VideoSDK.createScreenShareVideoTrack(multiStream: true, withAudio: true)
    #expect(layered.layerCount == 3 && layered.videoPublishOptions?.simulcast == true && layered.withAudio)
    #expect(layered.audioTrack == nil)  // withAudio is ignored, as on iOS
    layered.stop()
    #expect(layered.isEnded)
    #expect {
      try layered.checkNotEnded()
    } throws: { ($0 as? VideoSDKError)?.name == "ERROR_CUSTOM_VIDEO_TRACK_ENDED" }
  }

  @Test func errorsHaveTheSeedsCodesAndNames() {
    let codes = VideoSDKError.Code.allCases.map { "\($0.rawValue) \(VideoSDKError($0, "").name)" }
    #expect(
      codes == [
        "3017 ERROR_CAMERA_ACCESS_DENIED_OR_DISMISSED", "3018 ERROR_MICROPHONE_ACCESS_DENIED_OR_DISMISSED",
        "3021 ERROR_CAMERA_NOT_FOUND", "3022 ERROR_MICROPHONE_NOT_FOUND", "3023 ERROR_CAMERA_IN_USE",
        "3024 ERROR_MICROPHONE_IN_USE", "3026 ERROR_VIDEO_SOURCE_INITIATION_FAILED",
        "3031 ERROR_CUSTOM_VIDEO_TRACK_ENDED", "3032 ERROR_CUSTOM_AUDIO_TRACK_ENDED",
        "3071 ERROR_INVALID_CUSTOM_TRACK_CONFIG",
      ])
    // RevueSDK's device errors keep their number, and take the seed's name.
    let mapped = VideoSDKError(DeviceError(.cameraInUse, "busy"))
    #expect(mapped.code == 3023 && mapped.name == "ERROR_CAMERA_IN_USE")
    #expect("\(mapped)" == "ERROR_CAMERA_IN_USE (3023): busy")
  }
}

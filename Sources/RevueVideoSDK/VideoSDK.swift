// A port of VideoSDK code changes its imports and Apple types only: RevueSDK's types (the tracks,
// renderers, devices) come with this module.
@_exported import RevueSDK

/// VideoSDK's custom tracks (seed 002) over RevueSDK: each camera or microphone track is a RevueSDK
/// track whose capturer the face starts; there is no second capture path.
///
/// Linux asks no permission for cameras and microphones: a device that refuses access reports
/// `ERROR_CAMERA_ACCESS_DENIED_OR_DISMISSED` or `ERROR_MICROPHONE_ACCESS_DENIED_OR_DISMISSED` when
/// it is opened.
public enum VideoSDK {
  // MARK: - Devices

  /// The cameras present now; their `CaptureDevice/id` is a `cameraId` (the device path, or
  /// `virtual:PROFILE` for a virtual camera, where iOS has `AVCaptureDevice.uniqueID`).
  public static func getCameras() async -> [CaptureDevice] {
    (try? await CameraCapturer.captureDevices()) ?? []
  }

  /// The microphones present now; their `CaptureDevice/id` is a `microphoneId`.
  public static func getMics() async -> [CaptureDevice] {
    (try? await MicrophoneCapturer.captureDevices()) ?? []
  }

  // MARK: - Camera

  /// Opens a camera and returns its track, to preview before joining and then publish.
  ///
  /// The camera is `cameraId`'s when given, else the first one facing `facingMode`, else the
  /// first facing the other way, else any (a USB webcam faces neither way on Linux). It opens at
  /// ``CustomCameraTrackConfig/dimensions`` (or the nearest size it offers) and 30 fps; the
  /// track's ``CustomStreamTrack/videoPublishOptions`` carry the bitrate of `bitrateMode`, the
  /// layers and the codec for a publication. Making it ends an older track of the same camera.
  /// - Parameters:
  ///   - encoderConfig: the resolution and bitrates.
  ///   - facingMode: the side, when `cameraId` is nil.
  ///   - multiStream: whether smaller layers are sent beside the full size.
  ///   - maxLayer: the most layers, with `multiStream` only.
  ///   - bitrateMode: the column of the bitrate table.
  ///   - codec: the codec to send with.
  ///   - cameraId: a camera's `CaptureDevice/id` from ``getCameras()``; it wins over `facingMode`.
  /// - Returns: the track; its ``CustomStreamTrack/videoTrack`` has frames already.
  /// - Throws: ``VideoSDKError`` within about 2 seconds: `ERROR_CAMERA_NOT_FOUND` (3021) when there is no
  ///   camera, `ERROR_INVALID_CUSTOM_TRACK_CONFIG` (3071) when no camera has `cameraId`,
  ///   `ERROR_CAMERA_IN_USE` (3023) when it is busy, `ERROR_VIDEO_SOURCE_INITIATION_FAILED` (3026)
  ///   when it cannot be opened, `ERROR_CAMERA_ACCESS_DENIED_OR_DISMISSED` (3017) when it refuses access.
  ///
  ///   The errors are always ``VideoSDKError``, but the function is declared `throws`, not
  ///   `throws(VideoSDKError)`: Swift 6.3's compiler crashes (SILGen's ownership check, "Found
  ///   outside of lifetime use") on a port's `do { … } catch let error as VideoSDKError { … }`
  ///   around an `async throws(VideoSDKError)` call in top-level code (a `main.swift`), since the
  ///   error carries a `String`. Catch it with `catch let error as VideoSDKError`, as in VideoSDK.
  public static func createCameraVideoTrack(
    encoderConfig: CustomCameraTrackConfig = .h720p_w1280p, facingMode: FacingMode = .front,
    multiStream: Bool = true, maxLayer: EncodingLayer = .MAX_LAYER_3, bitrateMode: BitrateMode = .BALANCED,
    codec: VideoCodec = .VP8, cameraId: String? = nil
  ) async throws -> CustomStreamTrack {
    let device = try await camera(id: cameraId, facing: facingMode)
    let key = "camera:\(device.id)"
    await OpenTracks.endTrack(on: key)
    // The position is the camera's own: when the camera cannot be opened, RevueSDK's fallback
    // (the first camera of that position) is most often the same camera, and the start throws;
    // when it is another camera, the check below stops it and throws why this one did not open.
    let options = CameraCaptureOptions(
      device: device, position: device.position, dimensions: encoderConfig.dimensions, fps: encoderConfig.frameRate)
    let videoTrack = LocalVideoTrack.createCameraTrack(options: options)
    guard let capturer = videoTrack.capturer as? CameraCapturer else {
      throw VideoSDKError(.ERROR_VIDEO_SOURCE_INITIATION_FAILED, "RevueSDK made no camera capturer")
    }
    let events = capturer.events
    try await open("the camera \(device.name)", otherwise: .ERROR_VIDEO_SOURCE_INITIATION_FAILED) {
      try await capturer.startCapture()
    }
    if let opened = capturer.device, opened != device {
      // RevueSDK opened another camera in its place (one listed earlier with the same position).
      let error = capturer.deviceError
      try? await capturer.stopCapture()
      throw error.map(VideoSDKError.init)
        ?? VideoSDKError(.ERROR_CAMERA_IN_USE, "the camera \(device.name) could not be opened")
    }
    let track = CustomStreamTrack(
      videoTrack: videoTrack, codec: codec, facingMode: facingMode, encoderConfig: .camera(encoderConfig),
      cameraId: cameraId, multiStream: multiStream, maxLayer: maxLayer, bitrateMode: bitrateMode, device: device)
    track.watch(events, failure: .ERROR_CAMERA_NOT_FOUND) { event in
      switch event {
      case .interrupted(let reason): .failed(reason)
      case .state(.idle): .closed
      default: nil
      }
    }
    OpenTracks.register(track, on: key)
    return track
  }

  /// Runs `start` (a capturer's start): a `DeviceError` becomes its VideoSDK error, any other
  /// error one of code `otherwise`.
  private static func open(
    _ device: String, otherwise: VideoSDKError.Code, _ start: () async throws -> Void
  ) async throws(VideoSDKError) {
    do {
      try await start()
    } catch let error as DeviceError {
      throw VideoSDKError(error)
    } catch {
      throw VideoSDKError(otherwise, "\(device) could not be opened: \(error)")
    }
  }

  /// The camera of `id`, else the one for `facing`, else the other side's, else any colour camera.
  private static func camera(id: String?, facing: FacingMode) async throws(VideoSDKError) -> CaptureDevice {
    let cameras = await getCameras()
    guard !cameras.isEmpty else { throw VideoSDKError(.ERROR_CAMERA_NOT_FOUND, "there is no camera") }
    if let id {
      do {
        return try await CameraCapturer.captureDevice(id: id)
      } catch {
        throw VideoSDKError(error)
      }
    }
    // As RevueSDK picks by position: colour cameras with a format it can use.
    let usable = cameras.filter { !$0.isInfrared && !$0.formats.isEmpty }
    guard
      let camera = usable.first(where: { $0.position == facing.position })
        ?? usable.first(where: { $0.position == facing.opposite.position }) ?? usable.first
    else { throw VideoSDKError(.ERROR_CAMERA_NOT_FOUND, "there is no colour camera with a usable format") }
    return camera
  }

  // MARK: - Microphone

  /// Opens a microphone and returns its track.
  ///
  /// The microphone is `microphoneId`'s when given, else the first one. Making it ends an older
  /// track of the same microphone.
  /// - Parameters:
  ///   - encoderConfig: channels, bitrate, and the processing flags' defaults.
  ///   - noiseConfig: the processing flags (see ``NoiseConfig``); nil takes every flag from `encoderConfig`.
  ///   - microphoneId: a microphone's `CaptureDevice/id` from ``getMics()``.
  /// - Returns: the track, its microphone capturing.
  /// - Throws: ``VideoSDKError`` within about 2 seconds: `ERROR_MICROPHONE_NOT_FOUND` (3022) when there
  ///   is no microphone, `ERROR_INVALID_CUSTOM_TRACK_CONFIG` (3071) when no microphone has
  ///   `microphoneId`, `ERROR_MICROPHONE_IN_USE` (3024) when it cannot be opened,
  ///   `ERROR_MICROPHONE_ACCESS_DENIED_OR_DISMISSED` (3018) when it refuses access.
  ///
  ///   The errors are always ``VideoSDKError``, but the function is declared `throws`, not
  ///   `throws(VideoSDKError)`: Swift 6.3's compiler crashes (SILGen's ownership check, "Found
  ///   outside of lifetime use") on a port's `do { … } catch let error as VideoSDKError { … }`
  ///   around an `async throws(VideoSDKError)` call in top-level code (a `main.swift`), since the
  ///   error carries a `String`. Catch it with `catch let error as VideoSDKError`, as in VideoSDK.
  public static func createMicrophoneAudioTrack(
    encoderConfig: CustomMicrophoneTrackConfig = .speech_standard, noiseConfig: NoiseConfig? = nil,
    microphoneId: String? = nil
  ) async throws -> CustomStreamTrack {
    let microphones = await getMics()
    guard let first = microphones.first else {
      throw VideoSDKError(.ERROR_MICROPHONE_NOT_FOUND, "there is no microphone")
    }
    var device = first
    if let microphoneId {
      guard let named = microphones.first(where: { $0.id == microphoneId }) else {
        throw VideoSDKError(.ERROR_INVALID_CUSTOM_TRACK_CONFIG, "no microphone has the id '\(microphoneId)'")
      }
      device = named
    }
    let key = "microphone:\(device.id)"
    await OpenTracks.endTrack(on: key)
    let audioTrack = LocalAudioTrack.createMicrophoneTrack(
      options: AudioCaptureOptions(device: device, encoderConfig: encoderConfig, noiseConfig: noiseConfig))
    guard let capturer = audioTrack.capturer as? MicrophoneCapturer else {
      throw VideoSDKError(.ERROR_MICROPHONE_IN_USE, "RevueSDK made no microphone capturer")
    }
    let events = capturer.events
    try await open("the microphone \(device.name)", otherwise: .ERROR_MICROPHONE_IN_USE) {
      try await capturer.startCapture()
    }
    let track = CustomStreamTrack(
      audioTrack: audioTrack, encoderConfig: .microphone(encoderConfig), noiseConfig: noiseConfig,
      microphoneId: microphoneId, device: device)
    track.watch(events, failure: .ERROR_MICROPHONE_NOT_FOUND) { event in
      switch event {
      case .interrupted(let reason): .failed(reason)
      case .state(.idle): .closed
      default: nil
      }
    }
    OpenTracks.register(track, on: key)
    return track
  }

  // MARK: - Screen share

  /// The settings of a screen share: its profile and layers. Nothing is captured and nothing
  /// throws; the track's ``CustomStreamTrack/videoTrack`` and ``CustomStreamTrack/audioTrack`` are
  /// nil. On Linux the share is the X11 screen: ``CustomStreamTrack/screenShareOptions`` are the
  /// options of RevueSDK's screen share track, ``CustomStreamTrack/videoPublishOptions`` its
  /// publication's.
  /// - Parameters:
  ///   - encoderConfig: the frame rate and bitrate (and the size the screen is scaled to).
  ///   - multiStream: true to send three layers, false for one.
  ///   - withAudio: accepted and ignored, as on iOS.
  public static func createScreenShareVideoTrack(
    encoderConfig: CustomScreenShareTrackConfig = .h720p_15fps, multiStream: Bool = false, withAudio: Bool = false
  ) -> CustomStreamTrack {
    CustomStreamTrack(encoderConfig: .screenShare(encoderConfig), multiStream: multiStream, withAudio: withAudio)
  }
}

import Synchronization

/// A track made by ``VideoSDK``: a camera or microphone track whose device is open, or the
/// settings of a screen share.
///
/// Preview a camera before joining with `videoTrack?.add(videoRenderer:)` or a `VideoView` (where
/// iOS adds an `RTCMTLVideoView`). State reads and ``stop()`` are safe from any thread.
public final class CustomStreamTrack: Sendable {
  /// The handler of ``onEnded``.
  public typealias EndedHandler = @MainActor (VideoSDKError?) -> Void

  /// The encoder config a track was made with.
  public enum EncoderConfig: Sendable, Hashable {
    /// A camera track's.
    case camera(CustomCameraTrackConfig)
    /// A microphone track's.
    case microphone(CustomMicrophoneTrackConfig)
    /// A screen share track's.
    case screenShare(CustomScreenShareTrackConfig)
  }

  /// The camera's track; nil for a microphone or screen share track.
  public let videoTrack: LocalVideoTrack?
  /// The microphone's track; nil for a camera or screen share track.
  public let audioTrack: LocalAudioTrack?
  /// The codec a camera track was made with; nil for the others.
  public let codec: VideoCodec?
  /// The side a camera track was asked for (the camera used may face the other way: see
  /// ``device``); nil for the others.
  public let facingMode: FacingMode?
  /// The encoder config the track was made with.
  public let encoderConfig: EncoderConfig
  /// The `cameraId` a camera track was made with.
  public let cameraId: String?
  /// The `noiseConfig` a microphone track was made with.
  public let noiseConfig: NoiseConfig?
  /// The `microphoneId` a microphone track was made with.
  public let microphoneId: String?
  /// Whether the video is sent in several layers (`multiStream`); false for a microphone track.
  public let multiStream: Bool
  /// The `maxLayer` of a camera track; nil for the others.
  public let maxLayer: EncodingLayer?
  /// The `bitrateMode` of a camera track; nil for the others.
  public let bitrateMode: BitrateMode?
  /// The `withAudio` of a screen share track: accepted and ignored, as on iOS.
  public let withAudio: Bool
  /// The camera or microphone the track opened; nil for a screen share track.
  public let device: CaptureDevice?

  private struct State {
    var isEnded = false
    var error: VideoSDKError?
    var handler: EndedHandler?
    /// Closes the device and then tells the handler set when the track ended.
    var closing: Task<Void, Never>?
    var watcher: Task<Void, Never>?
  }

  private let state = Mutex(State())

  init(
    videoTrack: LocalVideoTrack? = nil, audioTrack: LocalAudioTrack? = nil, codec: VideoCodec? = nil,
    facingMode: FacingMode? = nil, encoderConfig: EncoderConfig, cameraId: String? = nil,
    noiseConfig: NoiseConfig? = nil, microphoneId: String? = nil, multiStream: Bool = false,
    maxLayer: EncodingLayer? = nil,
    bitrateMode: BitrateMode? = nil, withAudio: Bool = false, device: CaptureDevice? = nil
  ) {
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    self.codec = codec
    self.facingMode = facingMode
    self.encoderConfig = encoderConfig
    self.cameraId = cameraId
    self.noiseConfig = noiseConfig
    self.microphoneId = microphoneId
    self.multiStream = multiStream
    self.maxLayer = maxLayer
    self.bitrateMode = bitrateMode
    self.withAudio = withAudio
    self.device = device
  }

  deinit { state.withLock { $0.watcher }?.cancel() }

  // MARK: - Ending

  /// Whether the track has ended: ``stop()`` was called, its device was closed (its capturer
  /// stopped) or failed, or a newer track was made for the same device.
  public var isEnded: Bool { state.withLock { $0.isEnded } }

  /// Why the track ended, when its device failed; nil while it runs, or when it ended otherwise.
  public var error: VideoSDKError? { state.withLock { $0.error } }

  /// Called once, on the main actor, when the track ends: with the ``VideoSDKError`` when its
  /// device failed, nil otherwise. A handler set after the track ended is called at once, before
  /// the setter returns. Set it on the main actor, as iOS apps do.
  ///
  /// A device that fails after the track was made (a camera unplugged, a pipeline error) ends it
  /// with `ERROR_CAMERA_NOT_FOUND` (3021) or `ERROR_MICROPHONE_NOT_FOUND` (3022): the track
  /// has no device any more. Its device is not reopened when it comes back.
  @MainActor public var onEnded: EndedHandler? {
    get { state.withLock { $0.handler } }
    set {
      let ended: (EndedHandler, VideoSDKError?)? = state.withLock { state in
        state.handler = newValue
        guard state.isEnded, let newValue else { return nil }
        return (newValue, state.error)
      }
      guard let (handler, error) = ended else { return }
      handler(error)
    }
  }

  /// Closes the camera or microphone the track opened, for example when the user leaves a
  /// preview without joining; ``onEnded`` then gets nil. The device closes on a task of its own.
  /// The track ends either way, but while a publication sends it (`LocalVideoTrack/isPublished`)
  /// the device stays open, as seed 002 says: stop the publication and the capturer to release it.
  public func stop() { end(nil, keepingPublishedDevice: true) }

  /// Throws VideoSDK's error of an ended track: what a room reports when it is given one.
  /// - Throws: ``VideoSDKError`` `ERROR_CUSTOM_VIDEO_TRACK_ENDED` (3031) for a camera or screen share
  ///   track, `ERROR_CUSTOM_AUDIO_TRACK_ENDED` (3032) for a microphone track, when it has ended.
  public func checkNotEnded() throws(VideoSDKError) {
    guard isEnded else { return }
    if audioTrack != nil {
      throw VideoSDKError(.ERROR_CUSTOM_AUDIO_TRACK_ENDED, "the microphone track has ended: create a new one")
    }
    throw VideoSDKError(.ERROR_CUSTOM_VIDEO_TRACK_ENDED, "the video track has ended: create a new one")
  }

  /// Ends the track (the first call only): closes its device, unless it is published and
  /// `keepingPublishedDevice`, then tells the handler on the main actor.
  /// - Returns: the task that closes the device and tells the handler.
  @discardableResult
  func end(_ error: VideoSDKError?, keepingPublishedDevice: Bool = false) -> Task<Void, Never> {
    let keeps = keepingPublishedDevice && (videoTrack?.isPublished == true || audioTrack?.isPublished == true)
    let video = keeps ? nil : videoTrack?.capturer
    let audio = keeps ? nil : audioTrack?.capturer
    let (closing, watcher) = state.withLock { state -> (Task<Void, Never>, Task<Void, Never>?) in
      if let closing = state.closing { return (closing, nil) }
      state.isEnded = true
      state.error = error
      let handler = state.handler
      let closing = Task {
        try? await video?.stopCapture()
        try? await audio?.stopCapture()
        if let handler { await MainActor.run { handler(error) } }
      }
      state.closing = closing
      return (closing, state.watcher)
    }
    watcher?.cancel()  // outside the lock: cancelling runs the watcher's stream's ending
    return closing
  }

  /// How a capturer stopped.
  enum Stop {
    /// By itself, for this reason (the device went away or failed).
    case failed(String)
    /// Because it was stopped.
    case closed
  }

  /// Ends the track when its capturer stops: with `failure` when it stopped by itself, with no
  /// error when it was stopped. `stop` tells which event is which (nil for the others).
  func watch<Event: Sendable>(
    _ events: AsyncStream<Event>, failure: VideoSDKError.Code, stop: @escaping @Sendable (Event) -> Stop?
  ) {
    let watcher = Task { [weak self] in
      for await event in events {
        switch stop(event) {
        case nil: continue
        case .failed(let reason): self?.end(VideoSDKError(failure, reason))
        case .closed: self?.end(nil)
        }
        return
      }
    }
    let ended = state.withLock { state in
      if !state.isEnded { state.watcher = watcher }
      return state.isEnded
    }
    if ended { watcher.cancel() }
  }
}

// MARK: - One track per device

/// The camera and microphone tracks whose devices are open, by device: a newer track for a
/// device ends the older one, which closes the device first.
enum OpenTracks {
  private struct Entry: @unchecked Sendable {
    // Safety (@unchecked): a weak reference to a Sendable class, only touched under the mutex.
    weak var track: CustomStreamTrack?
  }

  private static let tracks = Mutex<[String: Entry]>([:])

  /// Ends the track open on `key` (if any) and waits until its device is closed.
  static func endTrack(on key: String) async {
    let older = tracks.withLock { $0.removeValue(forKey: key)?.track }
    await older?.end(nil).value
  }

  /// Records `track` as the one open on `key`.
  static func register(_ track: CustomStreamTrack, on key: String) {
    tracks.withLock { $0[key] = Entry(track: track) }
  }
}

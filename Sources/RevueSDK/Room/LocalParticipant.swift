import Synchronization

/// This process's participant: the camera, microphone and screen share tracks, which exist
/// before they run, and the switches that turn them on and off.
///
/// ``setCamera(enabled:options:)``, ``setMicrophone(enabled:)`` and ``setScreenShare(enabled:)``
/// return at once: ``isCameraActive``, ``isMicrophoneActive`` and ``isScreenShareActive`` change
/// at once, and the device follows a short delay after the last call, applying only the final
/// state. When the device cannot start, the flag goes back to false; nothing is thrown.
public final class LocalParticipant: Sendable {
  /// How long a switch waits for a later one before the device follows.
  static let switchDelay: Duration = .milliseconds(100)

  /// The camera's track.
  public let cameraTrack: LocalVideoTrack
  /// The microphone's track.
  public let microphoneTrack: LocalAudioTrack
  /// The screen share's track (``ScreenShareCapturer``, 1280×720 at 15 fps by default).
  public let screenShareTrack: LocalVideoTrack

  private let broadcast = Broadcast<Event>()
  private let roomReference = Mutex(WeakRoom(room: nil))

  /// The room the participant belongs to.
  var room: WeakRoom {
    get { roomReference.withLock { $0 } }
    set { roomReference.withLock { $0 = newValue } }
  }
  private let camera: DeviceSwitch
  private let microphone: DeviceSwitch
  private let screenShare: DeviceSwitch
  private let destroyed = Atomic(false)

  init() {
    let broadcast = self.broadcast
    camera = DeviceSwitch { broadcast.send(.cameraActive($0)) }
    microphone = DeviceSwitch { broadcast.send(.microphoneActive($0)) }
    screenShare = DeviceSwitch { broadcast.send(.screenShareActive($0)) }
    cameraTrack = LocalVideoTrack.createCameraTrack()
    microphoneTrack = LocalAudioTrack.createMicrophoneTrack()
    screenShareTrack = LocalVideoTrack.createScreenShareTrack()
    watchDevices()
  }

  private var cameraCapturer: CameraCapturer { cameraTrack.capturer as! CameraCapturer }

  /// Whether the camera is on, or about to be: changes at once with ``setCamera(enabled:options:)``,
  /// and goes back to false when the camera cannot start or stops by itself (unplugged).
  public var isCameraActive: Bool { camera.isActive }

  /// Whether the microphone is on, or about to be.
  public var isMicrophoneActive: Bool { microphone.isActive }

  /// Whether the screen share is on, or about to be: goes back to false when it cannot start
  /// (its capturer's state is then ``CaptureState/error``).
  public var isScreenShareActive: Bool { screenShare.isActive }

  /// A change of ``isCameraActive``, ``isMicrophoneActive`` or ``isScreenShareActive``.
  public enum Event: Sendable, Hashable {
    /// ``isCameraActive`` changed to this value.
    case cameraActive(Bool)
    /// ``isMicrophoneActive`` changed to this value.
    case microphoneActive(Bool)
    /// ``isScreenShareActive`` changed to this value.
    case screenShareActive(Bool)
  }

  /// The changes of the three flags from now on, in order: for code without a main loop, and to
  /// learn that a device could not start.
  public var events: AsyncStream<Event> { broadcast.subscribe() }

  /// Turns the camera on or off. When `options` are given, the camera uses them (as
  /// ``CameraCapturer/set(options:)`` does); when they cannot be applied, it starts with the
  /// options it had.
  ///
  /// Off means off: once it returns with `enabled: false`, no camera frame reaches a renderer or
  /// a publication (the track's placeholder does, if it has one), while the camera itself stops
  /// a moment later.
  public func setCamera(enabled: Bool, options: CameraCaptureOptions? = nil) {
    guard isUsable(enabled) else { return }
    if enabled { cameraTrack.gate.open() } else { cameraTrack.gate.close() }
    let capturer = cameraCapturer
    camera.request(enabled) { [camera] enabled in
      if enabled {
        if let options {
          if capturer.captureState == .capturing {
            _ = try? await capturer.set(options: options)
            return
          }
          let previous = capturer.options
          capturer.record(options)
          do {
            try await capturer.startCapture()
            return
          } catch {
            RevueLog.log(
              .warning, "LocalParticipant", "the camera options cannot be applied (\(error)); using the previous ones")
            capturer.record(previous)
          }
        }
        do {
          try await capturer.startCapture()
        } catch {
          RevueLog.log(.warning, "LocalParticipant", "the camera cannot start: \(error)")
          camera.fail()
        }
      } else {
        try? await capturer.stopCapture()
      }
    }
  }

  /// Publishes a video track to the room's destination: encoding starts at once and sends
  /// every frame the track delivers. Publishing does not start the capturer.
  ///
  /// To a WHIP destination the track is offered in a WebRTC session of its own, in simulcast
  /// layers unless the options say otherwise (sent if the endpoint takes them), and the call
  /// returns once the connection is up; the capturer must be running, since the offer waits for
  /// the first encoded frame.
  /// - Throws: ``RevueError`` when the room is not connected or the send pipeline cannot start;
  ///   for WHIP, as ``WHIPPublication/init(publishing:audio:to:token:codec:encoding:simulcast:audioEncoding:adaptiveBitrate:timeout:)``.
  public func publish(videoTrack: LocalVideoTrack, options: VideoPublishOptions = VideoPublishOptions()) async throws
    -> LocalTrackPublication
  {
    guard let room = room.room else { throw RevueError(.invalidState, "the participant's room is gone") }
    return try await room.publish(videoTrack, options: options)
  }

  /// Publishes an audio track (Opus, in-band FEC, DTX as the options say over RTP) to the room's
  /// destination; to a WHIP destination, in a WebRTC session of its own, as a video track is.
  /// Publishing does not start the capturer.
  /// - Throws: ``RevueError`` when the room is not connected or the send pipeline cannot start.
  public func publish(audioTrack: LocalAudioTrack, options: AudioPublishOptions = AudioPublishOptions()) async throws
    -> LocalTrackPublication
  {
    guard let room = room.room else { throw RevueError(.invalidState, "the participant's room is gone") }
    return try await room.publish(audioTrack, options: options)
  }

  /// Stops a publication; the track and its capturer go on. A WHIP publication's session is
  /// deleted on the endpoint before it returns (waited for up to 5 s).
  public func unpublish(publication: LocalTrackPublication) async {
    await room.room?.unpublish(publication)?.value
  }

  /// Turns the microphone on or off. Once it returns with `enabled: false`, no microphone audio
  /// reaches a renderer or a publication, while the microphone itself stops a moment later.
  public func setMicrophone(enabled: Bool) {
    guard isUsable(enabled) else { return }
    if enabled { microphoneTrack.gate.open() } else { microphoneTrack.gate.close() }
    let capturer = microphoneTrack.capturer!
    microphone.request(enabled) { [microphone] enabled in
      do {
        if enabled { try await capturer.startCapture() } else { try await capturer.stopCapture() }
      } catch {
        RevueLog.log(.warning, "LocalParticipant", "the microphone cannot start: \(error)")
        microphone.fail()
      }
    }
  }

  /// Turns the screen share on or off (the X11 screen of `DISPLAY`, with the options of
  /// ``ScreenShareCapturer/options``). Once it returns with `enabled: false`, no screen frame
  /// reaches a renderer or a publication. When it cannot start (no display), the flag goes back
  /// to false and the capturer's state is ``CaptureState/error``.
  public func setScreenShare(enabled: Bool) {
    guard isUsable(enabled) else { return }
    if enabled { screenShareTrack.gate.open() } else { screenShareTrack.gate.close() }
    let capturer = screenShareTrack.capturer!
    screenShare.request(enabled) { [screenShare] enabled in
      do {
        if enabled { try await capturer.startCapture() } else { try await capturer.stopCapture() }
      } catch {
        RevueLog.log(.warning, "LocalParticipant", "the screen share cannot start: \(error)")
        screenShare.fail()
      }
    }
  }

  /// Turns on or off the device of `source`, as its own switch does: `.camera` is
  /// ``setCamera(enabled:options:)``, `.microphone` ``setMicrophone(enabled:)`` and
  /// `.screenShareVideo` ``setScreenShare(enabled:)``. The other sources have no device of the
  /// participant's: the call logs a warning and changes nothing.
  public func set(source: Track.Source, enabled: Bool) {
    switch source {
    case .camera: setCamera(enabled: enabled)
    case .microphone: setMicrophone(enabled: enabled)
    case .screenShareVideo: setScreenShare(enabled: enabled)
    case .screenShareAudio, .unknown:
      RevueLog.log(.warning, "LocalParticipant", "set(source: .\(source), enabled:) ignored: no device has that source")
    }
  }

  /// Ends the participant: the camera, microphone and screen share switch off (their frames stop
  /// at once, the devices a moment later), every publication of the room stops, and the switches
  /// do nothing from then on. The participant lets go of its tracks, as seed 001 says: the views
  /// showing ``cameraTrack`` or ``screenShareTrack`` clear and let go of them (their `track`
  /// reads nil), and their renderers get nothing more. The track objects stay readable, idle,
  /// for code that holds them. Calling it again does nothing.
  public func destroy() {
    setCamera(enabled: false)
    setMicrophone(enabled: false)
    setScreenShare(enabled: false)
    guard !destroyed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    cameraTrack.release()
    screenShareTrack.release()
    microphoneTrack.renderers.removeAll()
    if let room = room.room {
      for publication in room.publications { room.unpublish(publication) }
    }
  }

  /// Whether a switch may act: after ``destroy()``, turning a device on is refused (logged);
  /// turning it off is always allowed.
  private func isUsable(_ enabled: Bool) -> Bool {
    guard enabled, destroyed.load(ordering: .acquiring) else { return true }
    RevueLog.log(.warning, "LocalParticipant", "the participant was destroyed: its devices stay off")
    return false
  }

  /// Follows the camera, microphone and screen share when they stop or resume by themselves
  /// (unplugged, failed, plugged back).
  private func watchDevices() {
    Self.follow(cameraCapturer.events, with: camera)
    if let events = screenShareTrack.capturer?.events { Self.follow(events, with: screenShare) }
    if let events = microphoneTrack.capturer?.events { Self.follow(events, with: microphone) }
  }

  /// Turns `device`'s flag off when its capturer is interrupted, back on when it captures again.
  private static func follow<Event: CaptureEvent>(_ events: AsyncStream<Event>, with device: DeviceSwitch) {
    Task {
      for await event in events {
        if event.isInterruption { device.deviceStopped() }
        if event.isCapturing { device.deviceResumed() }
      }
    }
  }
}

/// The events of video and audio capturers, as the participant's switches follow them.
protocol CaptureEvent: Sendable {
  /// Capture stopped by itself.
  var isInterruption: Bool { get }
  /// Capture is running (again).
  var isCapturing: Bool { get }
}

extension VideoCapturer.Event: CaptureEvent {
  var isInterruption: Bool { if case .interrupted = self { true } else { false } }
  var isCapturing: Bool { self == .state(.capturing) }
}

extension AudioCapturer.Event: CaptureEvent {
  var isInterruption: Bool { if case .interrupted = self { true } else { false } }
  var isCapturing: Bool { self == .state(.capturing) }
}

/// One device's on/off switch: the flag changes at once; the device follows after the delay,
/// applying only the last request, one change at a time.
final class DeviceSwitch: Sendable {
  private struct State {
    var active = false
    /// What the user asked for last.
    var wanted = false
    var generation: UInt64 = 0
    /// The change in progress, awaited by the next one.
    var running: Task<Void, Never>?
  }

  private let state = Mutex(State())
  private let changed: @Sendable (Bool) -> Void

  /// A switch that calls `changed` (under its lock, so in order) whenever the flag changes.
  init(changed: @escaping @Sendable (Bool) -> Void) { self.changed = changed }

  var isActive: Bool { state.withLock { $0.active } }

  private func setActive(_ active: Bool, in state: inout State) {
    guard state.active != active else { return }
    state.active = active
    changed(active)
  }

  /// Records `enabled`; after the delay, unless a later request came, runs `apply` (after any
  /// change still running).
  func request(_ enabled: Bool, apply: @escaping @Sendable (Bool) async -> Void) {
    state.withLock { state in
      setActive(enabled, in: &state)
      state.wanted = enabled
      state.generation += 1
      let generation = state.generation
      let previous = state.running
      state.running = Task { [weak self] in
        try? await Task.sleep(for: LocalParticipant.switchDelay)
        await previous?.value
        guard let self, self.state.withLock({ $0.generation == generation }) else { return }
        await apply(enabled)
      }
    }
  }

  /// The device could not start: the flag goes back to false.
  func fail() {
    state.withLock { state in
      setActive(false, in: &state)
      state.wanted = false
    }
  }

  /// The device stopped by itself: the flag turns false, the wish stays (to resume).
  func deviceStopped() { state.withLock { setActive(false, in: &$0) } }

  /// The device runs again: the flag turns true when the user still wants it.
  func deviceResumed() { state.withLock { setActive($0.wanted, in: &$0) } }
}

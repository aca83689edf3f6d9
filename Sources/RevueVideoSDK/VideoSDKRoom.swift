import Foundation

/// What a ``VideoSDKRoom`` tells the app: the part of VideoSDK's meeting events its custom
/// tracks use.
public protocol RoomEventListener: AnyObject, Sendable {
  /// A call went on otherwise than asked: a custom track given to the room had ended
  /// (`ERROR_CUSTOM_VIDEO_TRACK_ENDED`, 3031, or `ERROR_CUSTOM_AUDIO_TRACK_ENDED`, 3032), and the
  /// room sends its default camera or microphone instead. Called on the main actor.
  @MainActor func onError(error: VideoSDKError)
}

/// Seed 002's room, as far as custom tracks go: it sends a ``CustomStreamTrack`` (or its default
/// camera and microphone) through a RevueSDK `Room`.
///
/// Calls run one after another, in the order they were made. A custom track's device is closed
/// by ``disableCam()``, ``muteMic()`` and ``leave()`` (the track ends), even when the track was
/// stopped while the room sent it.
public actor VideoSDKRoom {
  /// What the room sends.
  enum Kind: Hashable, CaseIterable {
    case camera, microphone, screenShare
  }

  /// A publication and the custom track it sends (nil: the participant's own device).
  private struct Sent {
    var track: CustomStreamTrack?
    var publication: LocalTrackPublication
  }

  private struct WeakListener {
    weak var listener: (any RoomEventListener)?
  }

  /// The RevueSDK room underneath: its publications and, over RTP, its `sdp`.
  public nonisolated let room = Room()
  private let initialCamera: CustomStreamTrack?
  private let initialMicrophone: CustomStreamTrack?
  private let camEnabled: Bool
  private let micEnabled: Bool
  private var listeners: [WeakListener] = []
  private var sent: [Kind: Sent] = [:]
  private var last: Task<Void, Never>?

  /// Whether ``join(url:options:)`` succeeded and ``leave()`` was not called since.
  public private(set) var isJoined = false

  init(camera: CustomStreamTrack?, microphone: CustomStreamTrack?, camEnabled: Bool, micEnabled: Bool) {
    initialCamera = camera
    initialMicrophone = microphone
    self.camEnabled = camEnabled
    self.micEnabled = micEnabled
  }

  private var participant: LocalParticipant { room.localParticipant! }

  /// Whether the room sends a camera.
  public var isCamEnabled: Bool { sent[.camera] != nil }
  /// Whether the room sends a microphone.
  public var isMicEnabled: Bool { sent[.microphone] != nil }
  /// Whether the room shares the screen.
  public var isScreenShareEnabled: Bool { sent[.screenShare] != nil }

  /// Adds a listener, held weakly.
  public func addEventListener(_ listener: any RoomEventListener) {
    listeners.removeAll { $0.listener == nil }
    listeners.append(WeakListener(listener: listener))
  }

  /// Removes a listener.
  public func removeEventListener(_ listener: any RoomEventListener) {
    listeners.removeAll { $0.listener == nil || $0.listener === listener }
  }

  // MARK: - Joining

  /// Connects to `url` (`rtp://`, `srtp://` or `whip+https://`, as `Room/connect(to:options:)`
  /// takes it) and sends the camera and the microphone that the room was made with (custom
  /// tracks, or the default devices), each when enabled. Joining again does nothing.
  /// - Throws: `RevueError` for a URL the room cannot use, or a publication that cannot start;
  ///   ``VideoSDKError`` when a default device cannot open. Nothing is left sent then.
  public func join(url: URL, options: Room.ConnectOptions = Room.ConnectOptions()) async throws {
    try await inOrder { room in
      guard !room.isJoined else { return }
      try await room.room.connect(to: url, options: options)
      room.isJoined = true
      do {
        if room.camEnabled { try await room.send(.camera, room.initialCamera) }
        if room.micEnabled { try await room.send(.microphone, room.initialMicrophone) }
      } catch {
        await room.leaveNow()
        throw error
      }
    }
  }

  /// Stops sending, closes the devices the room sent from (custom tracks end) and disconnects.
  public func leave() async {
    try? await inOrder { room in await room.leaveNow() }
  }

  // MARK: - Camera, microphone, screen

  /// Sends `customCameraTrack`, or the default camera when nil, in place of the camera sent now.
  /// An ended track is reported to the listeners (3031) and the default camera is sent.
  /// - Throws: `RevueError` when the room has not been joined or the track is not a camera's,
  ///   or the publication cannot start; then `customCameraTrack` is stopped.
  public func enableCam(customCameraTrack: CustomStreamTrack? = nil) async throws {
    try await change(.camera, to: customCameraTrack, "enableCam")
  }

  /// As ``enableCam(customCameraTrack:)``, with a track to change to.
  public func changeCam(customCameraTrack: CustomStreamTrack) async throws {
    try await change(.camera, to: customCameraTrack, "changeCam")
  }

  /// Stops sending the camera and closes it.
  public func disableCam() async { try? await inOrder { room in await room.release(.camera) } }

  /// Sends `customMicrophoneTrack`, or the default microphone when nil, in place of the one sent
  /// now. An ended track is reported to the listeners (3032) and the default microphone is sent.
  /// - Throws: as ``enableCam(customCameraTrack:)``; then `customMicrophoneTrack` is stopped.
  public func unmuteMic(customMicrophoneTrack: CustomStreamTrack? = nil) async throws {
    try await change(.microphone, to: customMicrophoneTrack, "unmuteMic")
  }

  /// As ``unmuteMic(customMicrophoneTrack:)``, with a track to change to.
  public func changeMic(customMicrophoneTrack: CustomStreamTrack) async throws {
    try await change(.microphone, to: customMicrophoneTrack, "changeMic")
  }

  /// Stops sending the microphone and closes it.
  public func muteMic() async { try? await inOrder { room in await room.release(.microphone) } }

  /// Shares the screen with the profile of `track` (made by
  /// ``VideoSDK/createScreenShareVideoTrack(encoderConfig:multiStream:withAudio:)``).
  /// - Throws: `RevueError` when the room has not been joined, there is no display, or the
  ///   publication cannot start.
  public func enableScreenShare(_ track: CustomStreamTrack) async throws {
    try await change(.screenShare, to: track, "enableScreenShare")
  }

  /// Shares the screen with `profile`.
  public func enableScreenShare(_ profile: CustomScreenShareTrackConfig = .h720p_15fps) async throws {
    try await enableScreenShare(VideoSDK.createScreenShareVideoTrack(encoderConfig: profile))
  }

  /// Stops sharing the screen.
  public func disableScreenShare() async { try? await inOrder { room in await room.release(.screenShare) } }

  // MARK: - Underneath

  /// Runs `operation` after every call made before it.
  private func inOrder<T: Sendable>(
    _ operation: @escaping @Sendable (isolated VideoSDKRoom) async throws -> T
  ) async throws -> T {
    let previous = last
    let task = Task<T, any Error> {
      await previous?.value
      return try await operation(self)
    }
    last = Task { _ = try? await task.value }
    return try await task.value
  }

  /// Sends `track` as `kind` once joined; stops it when refused or failed.
  private func change(_ kind: Kind, to track: CustomStreamTrack?, _ call: String) async throws {
    try await inOrder { room in
      do {
        guard room.isJoined else {
          throw RevueError(.invalidState, "\(call) refused: the room has not been joined (the track was stopped)")
        }
        try await room.send(kind, track)
      } catch {
        track?.stop()
        throw error
      }
    }
  }

  /// Publishes `given` (the default device, or screen share profile, when nil or ended) as
  /// `kind`, then releases what was sent before.
  private func send(_ kind: Kind, _ given: CustomStreamTrack?) async throws {
    var track = given
    if let given {
      guard given.kind == kind else {
        throw RevueError(.invalidInput, "a \(given.kind) track cannot be sent as the \(kind)")
      }
      do {
        try given.checkNotEnded()
      } catch {
        await report(error)
        track = nil
      }
    }
    if let previous = sent[kind], previous.track === track { return }
    // A running screen capture keeps the options it started with: the new profile needs a new start.
    if kind == .screenShare { await release(.screenShare) }
    let publication = try await publish(kind, track)
    if let previous = sent.updateValue(Sent(track: track, publication: publication), forKey: kind) {
      await stop(previous, kind, keepingTheDefaultDevice: track == nil)
    }
  }

  /// Publishes `track`'s device, or the participant's own for `kind` (started here, so that a
  /// device that cannot open throws); a screen share takes `track`'s profile, else the default one.
  private func publish(_ kind: Kind, _ track: CustomStreamTrack?) async throws -> LocalTrackPublication {
    switch (kind, track) {
    case (.camera, let track?):
      return try await participant.publish(videoTrack: track.videoTrack!, options: track.videoPublishOptions!)
    case (.microphone, let track?):
      return try await participant.publish(audioTrack: track.audioTrack!, options: track.audioPublishOptions!)
    case (.camera, nil):
      try await start(participant.cameraTrack.capturer!.startCapture) { self.participant.setCamera(enabled: $0) }
      return try await participant.publish(videoTrack: participant.cameraTrack)
    case (.microphone, nil):
      try await start(participant.microphoneTrack.capturer!.startCapture) {
        self.participant.setMicrophone(enabled: $0)
      }
      return try await participant.publish(audioTrack: participant.microphoneTrack)
    case (.screenShare, _):
      let share = participant.screenShareTrack
      let profile = track ?? VideoSDK.createScreenShareVideoTrack()
      (share.capturer as? ScreenShareCapturer)?.options = profile.screenShareOptions!
      try await start(share.capturer!.startCapture) { self.participant.setScreenShare(enabled: $0) }
      return try await participant.publish(videoTrack: share, options: profile.videoPublishOptions!)
    }
  }

  /// Turns a default device on with its participant's `switch` and starts it now; turns it back
  /// off when it cannot start.
  private func start(_ startCapture: () async throws -> Void, switch turn: (Bool) -> Void) async throws {
    turn(true)
    do {
      try await startCapture()
    } catch let error as DeviceError {
      turn(false)
      throw VideoSDKError(error)
    } catch {
      turn(false)
      throw error
    }
  }

  /// Stops sending `kind` and closes its device now (a screen share started again must not
  /// find its capture still running with the old profile).
  private func release(_ kind: Kind) async {
    guard let previous = sent.removeValue(forKey: kind) else { return }
    await stop(previous, kind, keepingTheDefaultDevice: false)
  }

  /// Stops a publication and closes its device: a custom track's, or the participant's own
  /// unless it is sent again.
  private func stop(_ previous: Sent, _ kind: Kind, keepingTheDefaultDevice: Bool) async {
    await participant.unpublish(publication: previous.publication)
    await previous.track?.close()
    guard previous.track == nil || kind == .screenShare, !keepingTheDefaultDevice else { return }
    switch kind {
    case .camera:
      participant.setCamera(enabled: false)
      try? await participant.cameraTrack.capturer?.stopCapture()
    case .microphone:
      participant.setMicrophone(enabled: false)
      try? await participant.microphoneTrack.capturer?.stopCapture()
    case .screenShare:
      participant.setScreenShare(enabled: false)
      try? await participant.screenShareTrack.capturer?.stopCapture()
    }
  }

  private func leaveNow() async {
    for kind in Kind.allCases { await release(kind) }
    await room.disconnect()
    isJoined = false
  }

  /// Tells every listener, on the main actor.
  private func report(_ error: VideoSDKError) async {
    let listeners = listeners.compactMap(\.listener)
    await MainActor.run {
      for listener in listeners { listener.onError(error: error) }
    }
  }
}

extension CustomStreamTrack {
  /// What a room sends the track as.
  var kind: VideoSDKRoom.Kind {
    switch encoderConfig {
    case .camera: .camera
    case .microphone: .microphone
    case .screenShare: .screenShare
    }
  }

  /// Ends the track and closes its device, even when it was stopped while a room sent it (which
  /// left the device open).
  func close() async {
    await end(nil).value
    try? await videoTrack?.capturer?.stopCapture()
    try? await audioTrack?.capturer?.stopCapture()
  }
}

extension VideoSDK {
  /// Makes a room that sends `customCameraTrack` and `customMicrophoneTrack` (or the default
  /// camera and microphone when nil) once joined, each when enabled.
  /// - Parameters:
  ///   - customCameraTrack: a track from ``createCameraVideoTrack(encoderConfig:facingMode:multiStream:maxLayer:bitrateMode:codec:cameraId:)``.
  ///   - customMicrophoneTrack: a track from ``createMicrophoneAudioTrack(encoderConfig:noiseConfig:microphoneId:)``.
  ///   - camEnabled: whether the camera is sent at join.
  ///   - micEnabled: whether the microphone is sent at join.
  public static func createRoom(
    customCameraTrack: CustomStreamTrack? = nil, customMicrophoneTrack: CustomStreamTrack? = nil,
    camEnabled: Bool = true, micEnabled: Bool = true
  ) -> VideoSDKRoom {
    VideoSDKRoom(
      camera: customCameraTrack, microphone: customMicrophoneTrack, camEnabled: camEnabled, micEnabled: micEnabled)
  }
}

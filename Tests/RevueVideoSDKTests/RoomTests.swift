import Foundation
import RevueSDKTestSupport
import RevueTestSupport
import RevueVideoSDK
import Synchronization
import Testing

/// Seed 002's rules for custom tracks given to a room, against a real receiver.
@Suite(.serialized, .sharedProcess, .timeLimit(.minutes(1))) struct RoomTests {
  init() { TestEnvironment.prepare() }

  /// "If enableCam(customCameraTrack:) or unmuteMic(customMicrophoneTrack:) is refused, for
  /// example because you have not joined yet, the SDK stops the track you passed. The SDK also
  /// stops the track if changeCam(customCameraTrack:) or changeMic(customMicrophoneTrack:) fails."
  @MainActor @Test(.tier(.pipeline)) func refusedAndFailedCallsStopTheTrackPassed() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { cameras in
      try await Devices.withMicrophone { microphone in
        let room = VideoSDK.createRoom(camEnabled: false, micEnabled: false)
        let camera = try await VideoSDK.createCameraVideoTrack(encoderConfig: .h360p_w640p, cameraId: cameras[0].id)
        await #expect(throws: RevueError.self) { try await room.enableCam(customCameraTrack: camera) }
        try await Self.expectClosed(camera)
        let mic = try await VideoSDK.createMicrophoneAudioTrack(microphoneId: microphone.id)
        await #expect(throws: RevueError.self) { try await room.unmuteMic(customMicrophoneTrack: mic) }
        try await Self.expectClosed(mic)

        try await room.join(url: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 4))")!)
        #expect(room.room.publications.isEmpty, "nothing enabled at join")
        // A microphone track given as a camera: changeCam fails, and stops it.
        let wrong = try await VideoSDK.createMicrophoneAudioTrack(microphoneId: microphone.id)
        await #expect(throws: RevueError.self) { try await room.changeCam(customCameraTrack: wrong) }
        try await Self.expectClosed(wrong)
        let other = try await VideoSDK.createCameraVideoTrack(encoderConfig: .h360p_w640p, cameraId: cameras[0].id)
        await #expect(throws: RevueError.self) { try await room.changeMic(customMicrophoneTrack: other) }
        try await Self.expectClosed(other)
        let camOn = await room.isCamEnabled
        #expect(room.room.publications.isEmpty && !camOn)
        await room.leave()
      }
    }
  }

  /// A custom camera sent, changed for another (the first ends and its camera closes, a receiver
  /// decodes the second), then released by disableCam() although the app stopped it while sent.
  @MainActor @Test(.tier(.pipeline)) func aCustomCameraIsSentChangedAndReleased() async throws {
    try await TestCameras.with(["usb-720p-webcam", "usb-1080p-webcam"]) { cameras in
      let first = try await VideoSDK.createCameraVideoTrack(encoderConfig: .h360p_w640p, cameraId: cameras[0].id)
      let room = VideoSDK.createRoom(customCameraTrack: first, micEnabled: false)
      try await room.join(url: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 4))")!)
      #expect(room.room.publications.map(\.track).elementsEqual([first.videoTrack!], by: ===))
      try await Self.expectDecoded(room, width: 640)

      let second = try await VideoSDK.createCameraVideoTrack(encoderConfig: .h720p_w1280p, cameraId: cameras[1].id)
      let ended = EndedRecorder()
      first.onEnded = ended.handler
      try await room.changeCam(customCameraTrack: second)
      #expect(try await ended.firstCall() == nil)
      try await Self.expectClosed(first)
      #expect(room.room.publications.map(\.track).elementsEqual([second.videoTrack!], by: ===))
      try await Self.expectDecoded(room, width: 1280)

      // Stopped while the room sends it: the camera stays open until the room lets it go.
      second.stop()
      #expect(second.videoTrack?.capturer?.captureState == .capturing)
      await room.disableCam()
      try await Self.expectClosed(second)
      let camOn = await room.isCamEnabled
      #expect(room.room.publications.isEmpty && !camOn)
      await room.leave()
    }
  }

  /// A room joined over WHIP sends its custom tracks to the endpoint, where aiortc (a WebRTC
  /// stack no one here wrote) decodes them; a camera changed for another is a new session,
  /// decoded too; leaving deletes every session.
  @MainActor @Test(.tier(.interop)) func customTracksAreSentOverWHIP() async throws {
    let (endpoint, url) = try await WHIPEndpoint.start()
    try await TestCameras.with(["usb-720p-webcam", "usb-1080p-webcam"]) { cameras in
      try await Devices.withMicrophone { microphone in
        let camera = try await VideoSDK.createCameraVideoTrack(encoderConfig: .h360p_w640p, cameraId: cameras[0].id)
        let mic = try await VideoSDK.createMicrophoneAudioTrack(microphoneId: microphone.id)
        let room = VideoSDK.createRoom(customCameraTrack: camera, customMicrophoneTrack: mic)
        let listener = ErrorListener()
        await room.addEventListener(listener)
        try await room.join(url: url)
        try await WHIPEndpoint.waitForAudioAndVideo(endpoint)

        let other = try await VideoSDK.createCameraVideoTrack(encoderConfig: .h360p_w640p, cameraId: cameras[1].id)
        try await room.changeCam(customCameraTrack: other)
        try await endpoint.waitForOutput(within: 20, for: "30 frames of a second video session") { output in
          Set(output.split(separator: "\n").filter { $0.hasPrefix("frames 30 session ") }).count == 2
        }
        #expect(camera.isEnded && !other.isEnded)

        await room.leave()
        try await endpoint.waitForOutput(within: 10, for: "the three sessions deleted") { output in
          output.split(separator: "\n").filter { $0.hasPrefix("deleted session ") }.count == 3
        }
        #expect(listener.errors.isEmpty)
        #expect(other.isEnded && mic.isEnded, "leaving released the tracks it sent")
      }
    }
    await endpoint.stop()
  }

  /// A receiver of the room's SDP decodes a frame `width` wide.
  private static func expectDecoded(_ room: VideoSDKRoom, width: Int) async throws {
    let receiving = Room()
    let remote = try await receiving.listen(sdp: room.room.sdp, on: "127.0.0.1")
    let frames = FrameStream()
    remote.videoTrack?.add(videoRenderer: frames)
    _ = try await frames.next("a frame \(width) wide") { $0.dimensions.width == width }
    await receiving.disconnect()
  }

  /// The track ended and its device is closed.
  private static func expectClosed(_ track: CustomStreamTrack, sourceLocation: SourceLocation = #_sourceLocation)
    async throws
  {
    #expect(track.isEnded, sourceLocation: sourceLocation)
    let state = { track.videoTrack?.capturer?.captureState ?? track.audioTrack?.capturer?.captureState }
    try await withDeadline(5, "the track's device to close", sourceLocation: sourceLocation) {
      while state() != .idle { await Task.yield() }
    }
  }

  /// "Passing an ended track to a room reports 3031 or 3032 to onError(error:), and the room uses
  /// its default camera or microphone instead." The default devices pick by position and take
  /// the first microphone: the test runs alone.
  @MainActor @Test(.tier(.pipeline), .wholeProcess) func anEndedTrackIsReportedAndTheDefaultDeviceIsSent() async throws
  {
    try await TestCameras.with(["laptop-integrated", "usb-720p-webcam"]) { cameras in
      try await Devices.withMicrophone { microphone in
        try await TestCameras.waitUntilAlone(microphone)
        let camera = try await VideoSDK.createCameraVideoTrack(encoderConfig: .h360p_w640p, cameraId: cameras[0].id)
        let mic = try await VideoSDK.createMicrophoneAudioTrack(microphoneId: microphone.id)
        camera.stop()
        mic.stop()
        let room = VideoSDK.createRoom(customCameraTrack: camera, customMicrophoneTrack: mic)
        let listener = ErrorListener()
        await room.addEventListener(listener)
        try await room.join(url: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 4))")!)
        #expect(listener.errors.map(\.code) == [3031, 3032])
        #expect(listener.errors.map(\.name) == ["ERROR_CUSTOM_VIDEO_TRACK_ENDED", "ERROR_CUSTOM_AUDIO_TRACK_ENDED"])
        let participant = try #require(room.room.localParticipant)
        let sent = room.room.publications.map(\.track)
        #expect(sent.count == 2 && sent[0] === participant.cameraTrack && sent[1] === participant.microphoneTrack)
        let (camOn, micOn) = (await room.isCamEnabled, await room.isMicEnabled)
        #expect(camOn && micOn)

        let receiving = Room()
        let remote = try await receiving.listen(sdp: room.room.sdp, on: "127.0.0.1")
        let frames = FrameStream()
        remote.videoTrack?.add(videoRenderer: frames)
        let audio = AudioCounter()
        remote.audioTrack?.add(audioRenderer: audio)
        #expect(try await frames.next("the default camera at the receiver").dimensions.width == 1280)
        try await audio.waitForBuffers(5, "the default microphone at the receiver")
        // A custom camera in place of the default one: the default camera closes.
        let custom = try await VideoSDK.createCameraVideoTrack(encoderConfig: .h360p_w640p, cameraId: cameras[1].id)
        try await room.changeCam(customCameraTrack: custom)
        #expect(participant.cameraTrack.capturer?.captureState == .idle)
        #expect(room.room.publications.contains { $0.track === custom.videoTrack })

        await room.leave()
        let joined = await room.isJoined
        #expect(room.room.publications.isEmpty && !joined)
        await receiving.disconnect()
      }
    }
  }

  /// A default device that cannot open makes `join` throw VideoSDK's code of the cause, and
  /// nothing is left sent or open. The default devices pick among every device of the process:
  /// the test runs alone.
  @MainActor @Test(.tier(.interop), .wholeProcess) func aDefaultDeviceThatCannotOpenFailsTheJoinAndLeavesNothingSent()
    async throws
  {
    try await TestCameras.with(["laptop-integrated"]) { cameras in
      try await Devices.withMicrophone { microphone in
        try await TestCameras.waitUntilAlone(microphone)
        let url = URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 4))")!
        let room = VideoSDK.createRoom()
        let participant = try #require(room.room.localParticipant)

        VirtualDevices.setBusy(cameras[0].id, true)
        do {
          try await room.join(url: url)
          Issue.record("joined with a busy camera")
        } catch let error as VideoSDKError {
          #expect(error.code == 3023 && error.name == "ERROR_CAMERA_IN_USE", "\(error)")
        }
        VirtualDevices.setBusy(cameras[0].id, false)
        var joined = await room.isJoined
        #expect(!joined && room.room.publications.isEmpty)
        #expect(participant.microphoneTrack.capturer?.captureState == .idle, "the microphone was not opened")

        // The camera opens, the microphone refuses: the camera is closed again.
        VirtualDevices.setDenied(microphone.id, true)
        do {
          try await room.join(url: url)
          Issue.record("joined with a microphone that refuses access")
        } catch let error as VideoSDKError {
          #expect(error.code == 3018 && error.name == "ERROR_MICROPHONE_ACCESS_DENIED_OR_DISMISSED", "\(error)")
        }
        VirtualDevices.setDenied(microphone.id, false)
        joined = await room.isJoined
        #expect(!joined && room.room.publications.isEmpty)
        #expect(participant.cameraTrack.capturer?.captureState == .idle, "the camera was closed again")

        // Both open: the join goes through.
        try await room.join(url: url)
        #expect(room.room.publications.count == 2)
        await room.leave()
      }
    }
  }

  /// The seed's screen share example on an Xvfb screen, then its profile form. The share reads
  /// `DISPLAY`, which the test sets for the process: it runs alone.
  @Test(.tier(.pipeline), .wholeProcess) func theSeedsScreenShareExampleSharesTheScreen() async throws {
    let display = try await VirtualDisplay(width: 640, height: 480)
    let previous = ProcessInfo.processInfo.environment["DISPLAY"]
    setenv("DISPLAY", display.display, 1)
    defer {
      if let previous { setenv("DISPLAY", previous, 1) } else { unsetenv("DISPLAY") }
    }
    let room: VideoSDKRoom? = VideoSDK.createRoom(camEnabled: false, micEnabled: false)
    try await room?.join(url: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 4))")!)

    let shareTrack = VideoSDK.createScreenShareVideoTrack(encoderConfig: .h1080p_15fps, multiStream: false)
    try await room?.enableScreenShare(shareTrack)
    try await Self.expectDecoded(try #require(room), width: 1920)
    // "You can also pass a profile directly": the share restarts at the new size.
    try await room?.enableScreenShare(.h480p_15fps)
    #expect(shareTrack.isEnded)
    try await Self.expectDecoded(try #require(room), width: 640)
    await room?.disableScreenShare()
    #expect(room?.room.publications.isEmpty == true)
    await room?.leave()
    try await display.stop()
  }
}

/// Records the errors a room reports.
@MainActor final class ErrorListener: RoomEventListener {
  private(set) var errors: [VideoSDKError] = []

  func onError(error: VideoSDKError) { errors.append(error) }
}

/// Counts the audio buffers a track renders.
final class AudioCounter: AudioRenderer {
  private let count = Mutex(0)
  private let updates: AsyncStream<Int>
  private let continuation: AsyncStream<Int>.Continuation

  init() { (updates, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1)) }

  func render(pcmBuffer: AudioPCMBuffer) {
    continuation.yield(
      count.withLock {
        $0 += 1; return $0
      })
  }

  /// Waits until `buffers` were rendered, up to 10 seconds.
  func waitForBuffers(_ buffers: Int, _ what: String) async throws {
    guard count.withLock({ $0 }) < buffers else { return }
    let updates = updates
    try await withDeadline(10, what) {
      for await count in updates where count >= buffers { return }
      throw CancellationError()
    }
  }
}

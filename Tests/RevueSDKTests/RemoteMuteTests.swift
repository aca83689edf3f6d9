import Foundation
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@testable import RevueSDK

/// A sender's mute reaches its receivers (the SDES NOTE of its RTCP reports): the remote track
/// says it, its events and the participant's delegates tell it, and its views clear, as seed 001
/// says ("For a remote track, the view clears when the track becomes muted or stops").
@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct RemoteMuteTests {
  init() { TestEnvironment.prepare() }

  /// Records what a participant's delegate hears, as a stream.
  @MainActor final class MuteWatch: RemoteParticipantDelegate {
    let changes: AsyncStream<(String, Bool)>
    private let continuation: AsyncStream<(String, Bool)>.Continuation
    init() { (changes, continuation) = AsyncStream.makeStream() }
    func participant(_ participant: RemoteParticipant, track: Track, didUpdateIsMuted isMuted: Bool) {
      continuation.yield((track.name, isMuted))
    }
  }

  /// Waits, within 10 s, for the next change a delegate hears: the track's name and whether
  /// it is muted, as `name muted` or `name unmuted`.
  static func next(_ watch: MuteWatch, _ what: String) async throws -> String {
    let changes = watch.changes
    return try await withDeadline(10, what) {
      for await (name, muted) in changes { return "\(name) \(muted ? "muted" : "unmuted")" }
      return "none"
    }
  }

  /// Waits, within 10 s, for `event` on `events`; returns how long it took.
  static func wait(for event: StreamEvent, on events: AsyncStream<StreamEvent>, _ what: String) async throws -> Duration
  {
    let start = ContinuousClock.now
    try await withDeadline(10, what) {
      for await seen in events where seen == event { return }
      throw DeadlineExceeded("the track's events ended before \(what)")
    }
    return .now - start
  }

  @MainActor @Test func aSendersMuteReachesTheRemoteTrackItsEventsDelegatesAndViews() async throws {
    let sending = Room()
    try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 2))")!)
    let participant = try #require(sending.localParticipant)
    let video = LocalVideoTrack.createBufferTrack(name: "camera", source: .camera)
    video.mutePlaceholder = BufferCapturerTests.frame(.nv12, 160, 90)
    let capturer = try #require(video.capturer as? BufferCapturer)
    try await capturer.startCapture()
    _ = try await participant.publish(videoTrack: video)
    let audio = LocalAudioTrack.createBufferTrack(name: "microphone")
    let microphone = try #require(audio.capturer as? AudioBufferCapturer)
    try await microphone.startCapture()
    _ = try await participant.publish(audioTrack: audio)

    let receiving = Room()
    let remote = try await receiving.listen(sdp: sending.sdp, on: "127.0.0.1")
    let watch = MuteWatch()
    remote.add(delegate: watch)
    let remoteVideo = try #require(remote.videoTrack)
    let remoteAudio = try #require(remote.audioTrack)
    let videoEvents = remoteVideo.events
    let audioEvents = remoteAudio.events
    let view = VideoView(size: Dimensions(width: 64, height: 36), target: .offscreen)
    view.track = remoteVideo
    let renderer = FrameStream()
    remoteVideo.add(videoRenderer: renderer)
    let frame = BufferCapturerTests.frame(.nv12, 320, 180)
    let sound = try AudioBufferCapturerTests.tone(rate: 48_000, channels: 2, milliseconds: 33, float: false)
    let feeding = Task { @MainActor in
      while !Task.isCancelled {
        capturer.capture(frame)
        microphone.capture(sound)
        try? await Task.sleep(for: .milliseconds(33))  // A 30 fps source, and its sound.
      }
    }
    defer { feeding.cancel() }
    try await VideoViewTests.picture(of: view, "the camera's picture") { $0 != nil }
    #expect(!remoteVideo.isMuted && !remoteAudio.isMuted)

    // Muted: said within a report or two, the view clears and stays empty while the sender's
    // placeholder arrives (a custom renderer gets it).
    try await video.mute()
    let muting = try await Self.wait(for: .muted(true), on: videoEvents, "the remote video track muted")
    print("remote video muted \(muting) after the sender's mute")
    #expect(remoteVideo.isMuted)
    #expect(try await Self.next(watch, "the delegate told of the mute") == "\(remoteVideo.name) muted")
    _ = try await renderer.next("the placeholder, at a custom renderer") {
      $0.dimensions == Dimensions(width: 160, height: 90)
    }
    _ = try await renderer.next("the placeholder again") { $0.dimensions == Dimensions(width: 160, height: 90) }
    #expect(view.shownPicture == nil, "a muted remote track's view shows nothing")
    // A view attached while the track is muted starts empty.
    let late = VideoView(size: Dimensions(width: 64, height: 36), target: .offscreen)
    late.track = remoteVideo
    _ = try await renderer.next("one more placeholder") { $0.dimensions == Dimensions(width: 160, height: 90) }
    #expect(late.shownPicture == nil && view.shownPicture == nil)

    // Unmuted: the pictures come back.
    try await video.unmute()
    let unmuting = try await Self.wait(for: .muted(false), on: videoEvents, "the remote video track unmuted")
    print("remote video unmuted \(unmuting) after the sender's unmute")
    #expect(!remoteVideo.isMuted)
    #expect(try await Self.next(watch, "the delegate told of the unmute") == "\(remoteVideo.name) unmuted")
    try await VideoViewTests.picture(of: view, "the camera's picture again") { $0?.width == 64 }

    // The audio track's mute, the same way.
    try await audio.mute()
    _ = try await Self.wait(for: .muted(true), on: audioEvents, "the remote audio track muted")
    #expect(remoteAudio.isMuted)
    #expect(try await Self.next(watch, "the delegate told of the audio mute") == "\(remoteAudio.name) muted")

    // The track stops (the receiver disconnects): its view clears.
    await receiving.disconnect()
    try await VideoViewTests.picture(of: view, "the view cleared once the track stopped") { $0 == nil }
    feeding.cancel()
    try await capturer.stopCapture()
    try await microphone.stopCapture()
    await sending.disconnect()
  }

  /// A camera turned off is a mute to receivers, and turning it on again unmutes.
  @Test func aCameraTurnedOffIsMutedToReceivers() async throws {
    try await TestCameras.with(["csi-camera-module"]) { devices in
      let port = FreePorts.rtp()
      let (sending, participant, _) = try await TestCameras.sendingRoom(
        to: port, camera: devices[0], dimensions: .h360_169)
      let receiving = Room()
      let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
      let track = try #require(remote.videoTrack)
      let events = track.events
      let frames = FrameStream()
      track.add(videoRenderer: frames)
      _ = try await participant.publish(videoTrack: participant.cameraTrack)
      participant.setCamera(enabled: true)
      _ = try await frames.next("the camera's frames")
      #expect(!track.isMuted)
      participant.setCamera(enabled: false)
      _ = try await Self.wait(for: .muted(true), on: events, "the camera turned off, seen as a mute")
      participant.setCamera(enabled: true)
      _ = try await Self.wait(for: .muted(false), on: events, "the camera on again, seen as an unmute")
      participant.setCamera(enabled: false)
      await sending.disconnect()
      await receiving.disconnect()
    }
  }
}

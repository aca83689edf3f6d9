import CX11
import Foundation
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@testable import RevueSDK

// Seed 001's code examples as the seed writes them, with only the Apple types changed
// (`import UIKit` dropped; the placeholder `UIView()` → `VideoView(frame: .zero)`, as API.md
// maps UIView to VideoView), run under Xvfb.

/// Show a participant's camera in their tile, or the App's placeholder when the camera is muted.
/// firstCameraVideoTrack still returns the track while the participant is muted, so check isMuted.
/// Call this again from didUpdateIsMuted.
@MainActor
func showCamera(of friendId: String, in videoView: VideoView) -> Bool {
  let camera = Room.shared.remoteParticipants[friendId]?.firstCameraVideoTrack
  guard let camera, !camera.isMuted else {
    videoView.track = nil
    return false  // show the placeholder
  }
  videoView.track = camera
  return true
}

/// Preview a track the App creates itself. VideoView holds its track weakly: keep the track in a
/// property, or it is released and the view goes blank. Clear the view when it is no longer shown.
@MainActor
final class OwnTrackPreview {
  let track = LocalVideoTrack.createBufferTrack(name: "ipcam", source: .camera)
  let videoView = VideoView(frame: .zero)

  func show() {
    videoView.track = track
  }

  func hide() {
    videoView.track = nil
  }
}

/// Cover a tile with a placeholder until its video shows, and follow the tile's size.
/// Both events arrive on the main thread.
@MainActor
final class TileController: @MainActor VideoViewDelegate {
  let videoView = VideoView(frame: .zero)
  let placeholder = VideoView(frame: .zero)

  init() {
    videoView.add(delegate: self)  // held weakly
  }

  func videoView(_ videoView: VideoView, didUpdate isRendering: Bool) {
    placeholder.isHidden = isRendering
  }

  func videoView(_ videoView: VideoView, didUpdate size: CGSize) {
    // The new size of the view in points; not sent when it only moves.
    print("tile is now \(size.width)×\(size.height)")
  }

  func stopWatching() {
    videoView.remove(delegate: self)
  }
}

/// Seed 001's examples run on an X server (Xvfb) as the process's `DISPLAY`, which they use as
/// written: each test has the process to itself while it sets `DISPLAY`.
@Suite(.tier(.pipeline), .serialized, .timeLimit(.minutes(1))) struct Seed001ExampleTests {
  init() { TestEnvironment.prepare() }

  /// Runs `body` with a virtual X server as `DISPLAY`, and stops it after.
  @MainActor static func onXvfb(_ body: @MainActor (VirtualDisplay) async throws -> Void) async throws {
    let display = try await VirtualDisplay(width: 320, height: 240)
    let previous = ProcessInfo.processInfo.environment["DISPLAY"]
    setenv("DISPLAY", display.display, 1)
    var failure: (any Error)?
    do { try await body(display) } catch { failure = error }
    if let previous { setenv("DISPLAY", previous, 1) } else { unsetenv("DISPLAY") }
    try await display.stop()
    if let failure { throw failure }
  }

  /// A buffer track's frames, pushed every 33 ms until the task is cancelled.
  @MainActor static func feed(_ track: LocalVideoTrack, _ frame: PixelBuffer) -> Task<Void, Never> {
    let capturer = track.capturer as! BufferCapturer
    return Task { @MainActor in
      while !Task.isCancelled {
        capturer.capture(frame)
        try? await Task.sleep(for: .milliseconds(33))
      }
    }
  }

  @MainActor @Test(.wholeProcess) func ownTrackPreviewShowsItsTrackOnceLaidOutAndClearsOnHide() async throws {
    try await Self.onXvfb { _ in
      let preview = OwnTrackPreview()
      try await preview.track.capturer?.startCapture()
      let feeding = Self.feed(preview.track, try VideoViewTests.frame())
      defer { feeding.cancel() }
      preview.show()
      #expect(preview.videoView.track === preview.track)
      // `.zero`: not laid out, so nothing is drawn and the view is not rendering.
      #expect(!preview.videoView.isLaidOut && preview.videoView.renderer == "none")
      let seen = FrameStream()
      preview.track.add(videoRenderer: seen)
      _ = try await seen.next("five frames at the track") { _ in seen.count >= 5 }
      #expect(!preview.videoView.isRendering && preview.videoView.shownPicture == nil)
      let events = preview.videoView.events
      preview.videoView.frame = CGRect(x: 0, y: 0, width: 160, height: 90)
      #expect(preview.videoView.renderer == "ximagesink")
      try await VideoViewTests.picture(of: preview.videoView, "the preview's picture on Xvfb") {
        $0.map { VideoViewTests.color($0, 10, 45) } == "red"
      }
      try await withDeadline(5, "the preview to be rendering") {
        for await event in events where event == .rendering(true) { return }
      }
      preview.hide()
      #expect(preview.videoView.track == nil && preview.videoView.shownPicture == nil)
      #expect(!preview.videoView.isRendering)
      feeding.cancel()
      try await preview.track.capturer?.stopCapture()
      preview.videoView.close()
    }
  }

  @MainActor @Test(.wholeProcess) func tileControllerHidesItsPlaceholderWhileRenderingAndHearsItsSize() async throws {
    try await Self.onXvfb { _ in
      let tile = TileController()
      let sizes = tile.videoView.events
      tile.videoView.frame = CGRect(x: 10, y: 10, width: 120, height: 90)
      try await withDeadline(5, "the tile's size, in points") {
        for await event in sizes where event == .size(CGSize(width: 120, height: 90)) { return }
      }
      let track = LocalVideoTrack.createBufferTrack(name: "tile", source: .camera)
      try await track.capturer?.startCapture()
      let feeding = Self.feed(track, try VideoViewTests.frame())
      defer { feeding.cancel() }
      #expect(!tile.placeholder.isHidden)
      let changes = tile.videoView.events
      tile.videoView.track = track
      // The delegate hears each change in the same main-actor turn as the stream gets it.
      try await withDeadline(5, "the tile to render") {
        for await event in changes where event == .rendering(true) { return }
      }
      #expect(tile.placeholder.isHidden, "the placeholder hides while the tile renders")
      feeding.cancel()
      // No frame for 2 s: not rendering, and the placeholder shows again.
      try await withDeadline(5, "the tile to stop rendering") {
        for await event in changes where event == .rendering(false) { return }
      }
      #expect(!tile.placeholder.isHidden, "the placeholder shows once frames stop")
      tile.stopWatching()
      #expect(tile.videoView.delegates.all.isEmpty)
      try await track.capturer?.stopCapture()
      tile.videoView.close()
      tile.placeholder.close()
    }
  }

  @MainActor @Test(.wholeProcess) func showCameraShowsAFriendsCameraAndThePlaceholderWhileMuted() async throws {
    try await Self.onXvfb { _ in
      let sending = Room()
      try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 1))")!)
      let participant = try #require(sending.localParticipant)
      let video = LocalVideoTrack.createBufferTrack(name: "camera", source: .camera)
      try await video.capturer?.startCapture()
      _ = try await participant.publish(videoTrack: video)
      let friend = try await Room.shared.listen(sdp: sending.sdp, on: "127.0.0.1")
      let friendId = try #require(Room.shared.remoteParticipants.first { $0.value === friend }?.key)
      let feeding = Self.feed(video, try VideoViewTests.frame())
      defer { feeding.cancel() }
      let view = VideoView(frame: CGRect(x: 0, y: 0, width: 160, height: 90))
      #expect(!showCamera(of: "nobody", in: view) && view.track == nil)
      #expect(showCamera(of: friendId, in: view))
      #expect(view.track === friend.videoTrack)
      try await VideoViewTests.picture(of: view, "the friend's camera") {
        $0.map { VideoViewTests.color($0, 10, 45) } == "red"
      }
      // Muted: firstCameraVideoTrack is still the track, and showCamera shows the placeholder.
      let events = try #require(friend.videoTrack).events
      try await video.mute()
      try await withDeadline(10, "the friend's camera to read muted") {
        for await event in events where event == .muted(true) { return }
      }
      #expect(friend.firstCameraVideoTrack === friend.videoTrack)
      #expect(!showCamera(of: friendId, in: view) && view.track == nil && view.shownPicture == nil)
      feeding.cancel()
      await Room.shared.disconnect()
      try await video.capturer?.stopCapture()
      await sending.disconnect()
      view.close()
    }
  }
}

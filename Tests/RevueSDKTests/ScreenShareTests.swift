import Foundation
import RevueProcess
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Testing

/// Issue 15's screen share: the X11 screen of a display (Xvfb, started here) captured by
/// ``LocalParticipant/screenShareTrack``, through the track's processor, published and
/// received; with no display the capturer's state is `.error` and the switch goes back off.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(2))) struct ScreenShareTests {
  init() { TestEnvironment.prepare() }

  /// Whether the middle of `frame` is pure red (I420 or NV12, BT.601 video range: Y 81, U 90,
  /// V 240, give or take the encoder's).
  static func isRed(_ frame: PixelBuffer) -> Bool {
    guard let luma = try? frame.planeBytes(0), let first = try? frame.planeBytes(1) else { return false }
    let (x, y) = (frame.width / 2 + 8, frame.height / 2 + 8)
    let yValue = Int(luma[y * frame.planes[0].stride + x])
    let (u, v): (Int, Int)
    if frame.format == .nv12 {
      let index = (y / 2) * frame.planes[1].stride + (x / 2) * 2
      (u, v) = (Int(first[index]), Int(first[index + 1]))
    } else {
      guard let second = try? frame.planeBytes(2) else { return false }
      (u, v) = (
        Int(first[(y / 2) * frame.planes[1].stride + x / 2]), Int(second[(y / 2) * frame.planes[2].stride + x / 2])
      )
    }
    return abs(yValue - 81) < 16 && abs(u - 90) < 16 && abs(v - 240) < 16
  }

  /// A window filled with red on `display`, as big as its screen.
  static func redWindow(on display: VirtualDisplay, width: Int, height: Int) throws -> ChildProcess {
    try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/gst-launch-1.0"),
      [
        "-q", "videotestsrc", "pattern=solid-color", "foreground-color=0xffff0000", "!",
        "video/x-raw,width=\(width),height=\(height),framerate=10/1", "!", "ximagesink",
      ], environment: ["DISPLAY": display.display])
  }

  /// A processor that counts the frames it sees.
  final class CountingProcessor: VideoProcessor, @unchecked Sendable {
    private let lock = NSLock()
    private var seen = 0
    var count: Int { lock.withLock { seen } }
    func process(pixelBuffer frame: PixelBuffer) -> PixelBuffer? {
      lock.withLock { seen += 1 }
      return frame
    }
  }

  @Test func aWindowOnTheScreenArrivesAtAReceiver() async throws {
    let display = try await VirtualDisplay(width: 640, height: 480)
    let window = try Self.redWindow(on: display, width: 640, height: 480)
    let port = FreePorts.rtp()
    let receiving = Room()
    let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
    let received = FrameStream()
    try #require(remote.videoTrack).add(videoRenderer: received)

    let room = Room()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let participant = try #require(room.localParticipant)
    let track = participant.screenShareTrack
    #expect(track.source == .screenShareVideo)
    let capturer = try #require(track.capturer as? ScreenShareCapturer)
    capturer.options = ScreenShareCaptureOptions(
      dimensions: Dimensions(width: 320, height: 240), fps: 15, showCursor: false, display: display.display)
    let processor = CountingProcessor()
    track.processor = processor
    let local = FrameStream()
    track.add(videoRenderer: local)
    _ = try await participant.publish(
      videoTrack: track, options: ScreenShareCaptureOptions.Profile.h480p_15fps.publishOptions)
    let captureEvents = capturer.events
    participant.setScreenShare(enabled: true)
    #expect(participant.isScreenShareActive)

    let shown = try await local.next("the red window, captured") { Self.isRed($0) }
    #expect(shown.width == 320 && shown.height == 240)
    try await withDeadline(10, "the capturer to be capturing") {
      for await event in captureEvents where event == .state(.capturing) { return }
    }
    #expect(processor.count > 0)
    _ = try await received.next("the red window, received") { Self.isRed($0) }

    participant.setScreenShare(enabled: false)
    #expect(!participant.isScreenShareActive)
    try await withDeadline(10, "the screen share to stop") {
      for await event in captureEvents where event == .state(.idle) { return }
    }
    await room.disconnect()
    await receiving.disconnect()
    await window.stop()
    try await display.stop()
  }

  @Test func withNoDisplayTheCapturerIsInErrorAndTheSwitchGoesBackOff() async throws {
    let room = Room()
    let participant = try #require(room.localParticipant)
    let capturer = try #require(participant.screenShareTrack.capturer as? ScreenShareCapturer)
    capturer.options.display = ":65000"  // No server there.
    await #expect(throws: RevueError.self) { try await capturer.startCapture() }
    #expect(capturer.captureState == .error)

    let events = participant.events
    participant.setScreenShare(enabled: true)
    #expect(participant.isScreenShareActive)
    try await withDeadline(10, "the switch to go back off") {
      for await event in events where event == .screenShareActive(false) { return }
    }
    #expect(!participant.isScreenShareActive)
    #expect(capturer.captureState == .error)
  }

  /// VideoSDK's eight screen share profiles (seed 002), and the default (h720p_15fps).
  @Test func theProfilesAreSeed002s() {
    let table = ScreenShareCaptureOptions.Profile.allCases.map {
      "\($0.rawValue) \($0.dimensions.width)x\($0.dimensions.height) \($0.fps) \($0.bitrate / 1000)"
    }
    #expect(
      table == [
        "h360p_30fps 640x360 30 400", "h480p_15fps 640x480 15 300", "h480p_30fps 640x480 30 500",
        "h720p_5fps 1280x720 5 400", "h720p_15fps 1280x720 15 1000", "h720p_30fps 1280x720 30 1500",
        "h1080p_15fps 1920x1080 15 1500", "h1080p_30fps 1920x1080 30 2000",
      ])
    let defaults = ScreenShareCaptureOptions()
    #expect(defaults == ScreenShareCaptureOptions(profile: .h720p_15fps))
    #expect(ScreenShareCaptureOptions.Profile.h720p_15fps.publishOptions.simulcast == false)
  }
}

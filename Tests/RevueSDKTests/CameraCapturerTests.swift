import Foundation
import GStreamer
import RevueSDK
import RevueTestSupport
import Synchronization
import Testing

@Suite(.serialized, .timeLimit(.minutes(1))) struct CameraCapturerTests {
  init() { TestEnvironment.prepare() }

  /// A camera track on `device`, with a renderer.
  static func track(on device: CaptureDevice, _ options: CameraCaptureOptions = CameraCaptureOptions())
    -> (LocalVideoTrack, CameraCapturer, FrameStream)
  {
    let track = LocalVideoTrack.createCameraTrack(options: options.copyWith(device: device))
    let renderer = FrameStream()
    track.add(videoRenderer: renderer)
    return (track, track.capturer as! CameraCapturer, renderer)
  }

  @Test func mjpegCameraDeliversFramesOfTheChosenSize() async throws {
    let device = try await TestCameras.add("usb-720p-webcam")
    let (track, capturer, renderer) = Self.track(on: device)
    try await capturer.startCapture()
    #expect(capturer.captureState == .capturing)
    #expect(capturer.device == device)
    #expect(capturer.format?.encoding == .jpeg)
    let frame = try #require(await renderer.next())
    #expect(frame.dimensions == Dimensions(width: 1280, height: 720))
    #expect(capturer.dimensions == Dimensions(width: 1280, height: 720))
    try await capturer.stopCapture()
    #expect(capturer.device == nil)
    #expect(capturer.dimensions == nil)
    _ = track
  }
}

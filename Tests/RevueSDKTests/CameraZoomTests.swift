import Foundation
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

extension CameraCapturerTests {
  /// The first column of row `y` whose luma differs from the row's first pixel by more than 20:
  /// the end of the first of the seven SMPTE bars the virtual camera shows.
  static func firstEdge(_ frame: PixelBuffer, row y: Int) -> Int {
    (try? frame.withPlane(0) { bytes, plane in
      let row = y * plane.stride
      let first = Int(bytes[row])
      return (1..<frame.width).first { abs(Int(bytes[row + $0]) - first) > 20 } ?? frame.width
    }) ?? -1
  }

  /// Issue 15: the camera's own zoom (V4L2's `zoom_absolute`; the virtual 1080p webcam has the
  /// C920's 100–500), within its range, kept across a restart; a camera without it says so.
  @Test func theCamerasOwnZoomChangesItsPictureWithinItsRange() async throws {
    try await TestCameras.with(["usb-1080p-webcam", "laptop-integrated"]) { devices in
      #expect(devices[0].zoomRange == 100...500)
      #expect(devices[1].zoomRange == nil)
      let (track, capturer, renderer) = Self.track(on: devices[0], CameraCaptureOptions(dimensions: .h360_169))
      #expect(capturer.zoomRange == nil && capturer.zoom == nil)
      #expect { try capturer.set(zoom: 200) } throws: { "\($0)".contains("no camera is capturing") }
      try await capturer.startCapture()
      #expect(capturer.zoomRange == 100...500 && capturer.zoom == 100)
      let frameWidth = 640
      // Seven bars across: the first ends at 1/7 of the width. At 2× the picture starts a quarter
      // in, in the second bar, which ends at (2/7 − 1/4) × 2 = 1/14; at 3×, a third in, in the
      // third bar, which ends at (3/7 − 1/3) × 3 = 2/7.
      let near = { @Sendable (edge: Int, fraction: Double) in
        abs(Double(edge) - Double(frameWidth) * fraction) <= 4
      }
      _ = try await renderer.next("the whole picture") { near(Self.firstEdge($0, row: 20), 1 / 7) }
      #expect(try capturer.set(zoom: 200) == 200)
      let zoomed = try await renderer.next("the picture zoomed 2×") { near(Self.firstEdge($0, row: 20), 1 / 14) }
      #expect(zoomed.dimensions == Dimensions(width: 640, height: 360))
      #expect(try capturer.set(zoom: 10_000) == 500, "clamped to the range")
      #expect(try capturer.set(zoom: 300) == 300)
      try await capturer.stopCapture()
      try await capturer.startCapture()
      #expect(capturer.zoom == 300)
      _ = try await renderer.next("the picture zoomed 3× after a restart") { near(Self.firstEdge($0, row: 20), 2 / 7) }
      #expect(try capturer.set(zoom: 100) == 100)
      _ = try await renderer.next("the whole picture again") { near(Self.firstEdge($0, row: 20), 1 / 7) }
      // A camera without a zoom control.
      _ = try await capturer.set(options: capturer.options.copyWith(device: devices[1]))
      #expect(capturer.device == devices[1] && capturer.zoomRange == nil)
      #expect { try capturer.set(zoom: 200) } throws: { "\($0)".contains("has no zoom control") }
      try await capturer.stopCapture()
      _ = track
    }
  }
}

extension CameraCapturerTests {
  /// A zoom set while frames flow takes effect between two frames: `videocrop` reads its crop
  /// on the streaming thread, and a crop changed between its negotiation and a frame had it
  /// copy the new crop's rows out of a frame of the old size, past the end of the buffer
  /// (AddressSanitizer saw it in CI). Zoomed in and out as fast as the calls go for 60 frames.
  @Test func aZoomChangedWhileFramesFlowIsAppliedBetweenFrames() async throws {
    try await TestCameras.with(["usb-1080p-webcam"]) { devices in
      let (track, capturer, renderer) = Self.track(on: devices[0], CameraCaptureOptions(dimensions: .h360_169))
      try await capturer.startCapture()
      let zooming = Task.detached {
        var calls = 0
        while !Task.isCancelled {
          _ = try? capturer.set(zoom: calls % 2 == 0 ? 500 : 100)
          calls += 1
        }
        return calls
      }
      let frames = Mutex(0)
      _ = try await renderer.next("60 frames while zooming") { _ in
        frames.withLock {
          $0 += 1; return $0 == 60
        }
      }
      zooming.cancel()
      #expect(await zooming.value > 60)
      #expect(try capturer.set(zoom: 200) == 200)
      let zoomed = try await renderer.next("the picture zoomed 2× at last") {
        abs(Double(Self.firstEdge($0, row: 20)) - 640.0 / 14) <= 4
      }
      #expect(zoomed.dimensions == Dimensions(width: 640, height: 360))
      try await capturer.stopCapture()
      _ = track
    }
  }
}

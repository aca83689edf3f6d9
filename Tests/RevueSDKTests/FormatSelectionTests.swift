import Foundation
import GStreamer
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Testing

@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct FormatSelectionTests {
  init() { TestEnvironment.prepare() }

  /// One row: on a profile, asking for a size and rate gives a format, and a downgrade or not.
  struct Row: Sendable, CustomTestStringConvertible {
    var profile: String
    var asked: (Int32, Int32, Int)
    var encoding: CaptureFormat.Encoding
    var size: (Int32, Int32)
    var cameraRate: Double
    var downgrade: Bool
    var testDescription: String { "\(profile) \(asked.0)x\(asked.1)@\(asked.2)" }
  }

  static let rows: [Row] = [
    // A USB 2.0 webcam: raw YUY2 where it reaches the rate, MJPEG above.
    Row(
      profile: "usb-720p-webcam", asked: (1280, 720, 30), encoding: .jpeg, size: (1280, 720), cameraRate: 30,
      downgrade: false),
    Row(
      profile: "usb-720p-webcam", asked: (640, 480, 30), encoding: .raw(.yuy2), size: (640, 480), cameraRate: 30,
      downgrade: false),
    Row(
      profile: "usb-720p-webcam", asked: (1280, 720, 5), encoding: .raw(.yuy2), size: (1280, 720), cameraRate: 5,
      downgrade: false),
    Row(
      profile: "usb-720p-webcam", asked: (1920, 1080, 30), encoding: .jpeg, size: (1280, 720), cameraRate: 30,
      downgrade: true),
    Row(
      profile: "usb-1080p-webcam", asked: (1920, 1080, 30), encoding: .jpeg, size: (1920, 1080), cameraRate: 30,
      downgrade: false),
    Row(
      profile: "usb-1080p-webcam", asked: (1280, 720, 30), encoding: .jpeg, size: (1280, 720), cameraRate: 30,
      downgrade: false),
    Row(
      profile: "usb-1080p-webcam", asked: (640, 360, 24), encoding: .raw(.yuy2), size: (640, 360), cameraRate: 24,
      downgrade: false),
    Row(
      profile: "usb-1080p-webcam", asked: (3840, 2160, 30), encoding: .jpeg, size: (1920, 1080), cameraRate: 30,
      downgrade: true),
    Row(
      profile: "usb-1080p-webcam", asked: (2304, 1296, 2), encoding: .raw(.yuy2), size: (2304, 1296), cameraRate: 2,
      downgrade: false),
    // A laptop camera: 16:9 and 4:3 sizes, MJPEG up to 1280x720.
    Row(
      profile: "laptop-integrated", asked: (1280, 720, 30), encoding: .jpeg, size: (1280, 720), cameraRate: 30,
      downgrade: false),
    Row(
      profile: "laptop-integrated", asked: (848, 480, 30), encoding: .jpeg, size: (848, 480), cameraRate: 30,
      downgrade: false),
    Row(
      profile: "laptop-integrated", asked: (848, 480, 20), encoding: .raw(.yuy2), size: (848, 480), cameraRate: 20,
      downgrade: false),
    Row(
      profile: "laptop-integrated", asked: (1920, 1080, 30), encoding: .jpeg, size: (1280, 720), cameraRate: 30,
      downgrade: true),
    // No format reaches 60: the one that comes closest (MJPEG at 30, not YUY2 at 10).
    Row(
      profile: "laptop-integrated", asked: (1280, 720, 60), encoding: .jpeg, size: (1280, 720), cameraRate: 30,
      downgrade: false),
    // A camera module with rate ranges: the rate asked, inside the range.
    Row(
      profile: "csi-camera-module", asked: (1920, 1080, 30), encoding: .raw(.nv12), size: (1920, 1080), cameraRate: 30,
      downgrade: false),
    Row(
      profile: "csi-camera-module", asked: (640, 480, 60), encoding: .raw(.nv12), size: (640, 480), cameraRate: 60,
      downgrade: false),
    Row(
      profile: "csi-camera-module", asked: (3840, 2160, 15), encoding: .raw(.nv12), size: (3840, 2160), cameraRate: 15,
      downgrade: false),
    // 4K at 30 is out of reach: the rate ranks before the size, so 1080p at 30.
    Row(
      profile: "csi-camera-module", asked: (3840, 2160, 30), encoding: .raw(.nv12), size: (1920, 1080), cameraRate: 30,
      downgrade: true),
    // The infrared camera, when named: grey, rate clamped to its 15.
    Row(
      profile: "laptop-ir", asked: (1280, 720, 30), encoding: .raw(.gray8), size: (640, 360), cameraRate: 15,
      downgrade: true),
  ]

  @Test(arguments: rows) func formatOfEveryProfile(_ row: Row) async throws {
    try await TestCameras.with([row.profile]) { devices in try await check(row, on: devices[0]) }
  }

  private func check(_ row: Row, on device: CaptureDevice) async throws {
    let format = try #require(
      CameraCapturer.format(width: row.asked.0, height: row.asked.1, for: device, frameRate: row.asked.2))
    #expect(format.encoding == row.encoding)
    #expect(format.dimensions == Dimensions(width: row.size.0, height: row.size.1))

    // The same choice made by a running camera: frames of exactly that size, the downgrade event when it settles.
    let options = CameraCaptureOptions(
      dimensions: Dimensions(width: row.asked.0, height: row.asked.1), fps: row.asked.2)
    let (track, capturer, renderer) = CameraCapturerTests.track(on: device, options)
    let events = capturer.events
    try await capturer.startCapture()
    #expect(capturer.format == format)
    let frame = try await renderer.next()
    #expect(frame.dimensions == format.dimensions)
    #expect([.nv12, .i420].contains(frame.format))
    try await capturer.stopCapture()
    let downgrades = try await withDeadline(20, "the capturer's events up to its stop") {
      var downgrades: [VideoCapturer.Event] = []
      for await event in events {
        if case .downgradedResolution = event { downgrades.append(event) }
        if case .state(.idle) = event { break }
      }
      return downgrades
    }
    let asked = Dimensions(width: row.asked.0, height: row.asked.1)
    #expect(downgrades == (row.downgrade ? [.downgradedResolution(requested: asked, actual: format.dimensions)] : []))
    _ = track
  }

  @Test func formatsParsedFromDeviceCaps() async throws {
    try await TestCameras.with(["csi-camera-module", "usb-1080p-webcam"]) { devices in
      let (device, webcam) = (devices[0], devices[1])
      #expect(device.name == "CSI Camera Module")
      #expect(device.position == .back)
      #expect(device.formats.count == 10)
      let range = try #require(device.formats.first { $0.dimensions == .h1080_169 && $0.encoding == .raw(.nv12) })
      #expect(range.frameRates == [FrameRateRange(minimum: 1, maximum: 50)])
      #expect(webcam.position == .external)
      let discrete = try #require(webcam.formats.first { $0.encoding == .raw(.yuy2) && $0.dimensions.width == 640 })
      #expect(discrete.frameRates.map(\.maximum) == [30, 24, 20, 15, 10, 7.5, 5])
      #expect(webcam.formats.contains { $0.encoding == .h264 })
    }
  }

  @Test func maxFrameRateHelper() async throws {
    try await TestCameras.with(["usb-720p-webcam", "csi-camera-module"]) { devices in
      let (webcam, module) = (devices[0], devices[1])
      let yuy2720 = try #require(webcam.formats.first { $0.encoding == .raw(.yuy2) && $0.dimensions == .h720_169 })
      #expect(CameraCapturer.maxFrameRate(5, for: yuy2720) == 5)
      #expect(CameraCapturer.maxFrameRate(30, for: yuy2720) == 7)  // 7.5 is the most it offers
      let ranged = try #require(module.formats.first { $0.dimensions == .h720_169 })
      #expect(CameraCapturer.maxFrameRate(45, for: ranged) == 45)
      #expect(CameraCapturer.maxFrameRate(120, for: ranged) == 60)
      #expect(
        CameraCapturer.maxFrameRate(30, for: CaptureFormat(encoding: .jpeg, dimensions: .h720_169, frameRates: []))
          == nil)
    }
  }

  /// Picks a camera by position among every camera of the process: it runs alone.
  @Test(.wholeProcess) func infraredCameraIsListedButNeverPicked() async throws {
    try await TestCameras.with(["laptop-ir", "laptop-integrated"]) { devices in
      let infrared = devices[0]
      #expect(infrared.isInfrared)
      #expect(try await CameraCapturer.captureDevices().contains(infrared))
      // Both face the front: asking by position never gives the infrared one.
      let track = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(position: .front))
      let capturer = try #require(track.capturer as? CameraCapturer)
      try await capturer.startCapture()
      #expect(capturer.device?.isInfrared == false)
      #expect(capturer.device?.position == .front)
      try await capturer.stopCapture()
    }
  }

  @Test func malformedProfilesNameTheLine() throws {
    let text = "name: Broken\nposition: sideways\nvideo/x-raw, width=640\n"
    #expect {
      try CameraProfile(parsing: text, profileName: "broken", file: "broken.caps")
    } throws: { error in
      "\(error)".contains("broken.caps:2") && "\(error)".contains("sideways")
    }
    #expect {
      try CameraProfile(parsing: "name: X\nvideo/x-raw, width=(int)abc\n", profileName: "x", file: "x.caps")
    } throws: { error in "\(error)".contains("x.caps:2") }
    #expect {
      try CameraProfile(parsing: "# nothing\n", profileName: "e", file: "e.caps")
    } throws: { error in "\(error)".contains("no 'name:' line") }
    #expect(throws: RevueError.self) { try VirtualDevices.addCameras(["no-such-profile"]) }
    #expect(CameraProfile.shippedNames.count == 5)
    for zoom in ["500-100", "100", "a-b", "-5-10"] {
      #expect {
        try CameraProfile(parsing: "name: Z\nzoom: \(zoom)\nvideo/x-raw, width=640\n", profileName: "z", file: "z.caps")
      } throws: { error in "\(error)".contains("z.caps:2: zoom must be 'MIN-MAX'") }
    }
    let zoomed = try CameraProfile(
      parsing: "name: Z\nzoom: 100-500\nvideo/x-raw, width=640\n", profileName: "z", file: "z.caps")
    #expect(zoomed.zoomRange == 100...500)
  }
}

import Foundation
import GStreamer
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

/// Seed 000's and seed 002's rules where RevueSDK once differed from them (issue 17), and what
/// RevueSDK had without a test: defaults, permission errors, mono presets, the names a port needs.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct SeedRulesTests {
  init() { TestEnvironment.prepare() }

  // MARK: - The camera

  /// Picks cameras by position among every camera of the process: it runs alone.
  @Test(.wholeProcess) func theFrontCameraByDefaultAndAFlipFromTheCameraInUse() async throws {
    try await TestCameras.with(["csi-camera-module", "laptop-integrated"]) { devices in
      let back = devices[0]
      #expect(CameraCaptureOptions().position == .front)
      // The default track opens the front camera, though the back one was listed first.
      let track = LocalVideoTrack.createCameraTrack()
      let capturer = try #require(track.capturer as? CameraCapturer)
      try await capturer.startCapture()
      #expect(capturer.device?.position == .front)
      // Seed 000's flipCamera(): the other camera, then back.
      #expect(try await capturer.switchCameraPosition() == true)
      #expect(capturer.device == back && capturer.position == .back)
      #expect(try await capturer.switchCameraPosition() == true)
      #expect(capturer.device?.position == .front)
      try await capturer.stopCapture()

      // `device` wins over `position`; a flip goes from the camera in use (the back one), not
      // from `position` (front by default), so it does not reopen the same camera.
      let named = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(device: back))
      let namedCapturer = try #require(named.capturer as? CameraCapturer)
      try await namedCapturer.startCapture()
      #expect(namedCapturer.device == back && namedCapturer.position == .front)
      #expect(try await namedCapturer.switchCameraPosition() == true)
      #expect(namedCapturer.device?.position == .front && namedCapturer.options.device == nil)
      try await namedCapturer.stopCapture()
    }
  }

  /// A camera with no position of its own (USB) still opens with the default options: it runs
  /// alone, as the only camera.
  @Test(.wholeProcess) func aHostWithOnlyAUSBCameraUsesItByDefault() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let track = LocalVideoTrack.createCameraTrack()
      let capturer = try #require(track.capturer as? CameraCapturer)
      try await capturer.startCapture()
      #expect(capturer.device == devices[0])
      // No camera faces front or back: a flip has nowhere to go, and nothing changes.
      await #expect(throws: CameraCapturerError.deviceNotAvailable) { try await capturer.switchCameraPosition() }
      #expect(capturer.position == .front && capturer.device == devices[0])
      try await capturer.stopCapture()
    }
  }

  /// Seed 000: a switch that fails puts position and options back on the main thread, where an
  /// App reads them. The busy camera would fall back to any other of the process: it runs alone.
  @Test(.wholeProcess) @MainActor func aFailedSwitchRestoresTheOptionsOnTheMainActor() async throws {
    let devices = [try await TestCameras.add("laptop-integrated"), try await TestCameras.add("csi-camera-module")]
    let track = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(device: devices[0]))
    let capturer = try #require(track.capturer as? CameraCapturer)
    try await capturer.startCapture()
    let before = (capturer.options, capturer.position)
    VirtualDevices.setBusy(devices[1].id, true)
    let switched = try await withDeadline(20, "the switch to the busy camera") {
      try await capturer.switchCameraPosition()
    }
    VirtualDevices.setBusy(devices[1].id, false)
    #expect(switched == false)
    #expect(capturer.options == before.0 && capturer.position == before.1)
    #expect(capturer.device == devices[0] && capturer.captureState == .capturing)
    try await capturer.stopCapture()
    try await TestCameras.remove(devices)
  }

  /// The named camera is the only one, so there is nothing to fall back to: it runs alone.
  @Test(.wholeProcess) func aCameraThatRefusesAccessThrows3017() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      VirtualDevices.setDenied(devices[0].id, true)
      let track = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(device: devices[0]))
      await #expect {
        try await track.capturer?.startCapture()
      } throws: { error in
        let error = error as? DeviceError
        return error?.code == .cameraAccessDenied && error?.code.rawValue == 3017
          && error?.message.contains("Permission denied") == true
      }
      #expect(track.capturer?.captureState == .idle)
      // Access granted again: the same track opens it.
      VirtualDevices.setDenied(devices[0].id, false)
      try await track.capturer?.startCapture()
      #expect(track.capturer?.captureState == .capturing)
      try await track.capturer?.stopCapture()
    }
  }

  /// A camera that opens and never gives a frame fails after seed 002's 2 seconds. The only
  /// camera, so there is nothing to fall back to: it runs alone.
  @Test(.wholeProcess) func aCameraThatGivesNoFrameFailsAfterTwoSeconds() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      VirtualDevices.setStalled(devices[0].id, true)
      let track = LocalVideoTrack.createCameraTrack(options: CameraCaptureOptions(device: devices[0]))
      let clock = ContinuousClock()
      let start = clock.now
      await #expect {
        try await track.capturer?.startCapture()
      } throws: { error in (error as? DeviceError)?.code == .videoSourceInitiationFailed }
      let waited = clock.now - start
      #expect(waited >= .milliseconds(1900) && waited < .seconds(10), "waited \(waited)")
      VirtualDevices.setStalled(devices[0].id, false)
    }
  }

  /// Two camera tracks, each on its own camera, capture at once, each with its own frames.
  @Test func severalCameraTracksCaptureAtOnce() async throws {
    try await TestCameras.with(["usb-720p-webcam", "usb-1080p-webcam"]) { devices in
      let small = FrameStream()
      let large = FrameStream()
      let first = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(device: devices[0], dimensions: Dimensions(width: 640, height: 480)))
      let second = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(device: devices[1], dimensions: .h1080_169))
      first.add(videoRenderer: small)
      second.add(videoRenderer: large)
      try await first.capturer?.startCapture()
      try await second.capturer?.startCapture()
      _ = try await small.next("a 640×480 frame") { $0.dimensions == Dimensions(width: 640, height: 480) }
      _ = try await large.next("a 1080p frame") { $0.dimensions == .h1080_169 }
      #expect((first.capturer as? CameraCapturer)?.device == devices[0])
      #expect((second.capturer as? CameraCapturer)?.device == devices[1])
      try await first.capturer?.stopCapture()
      try await second.capturer?.stopCapture()
    }
  }

  /// A processor on a camera track (seed 000, "Process frames"): it runs once per frame on the
  /// capture thread, renderers get what it returns, and nil drops the frame.
  @Test func aProcessorOnACameraTrackChangesWhatIsShown() async throws {
    try await TestCameras.with(["usb-720p-webcam"]) { devices in
      let small = try PixelBuffer(
        width: 32, height: 16, format: .i420, bytes: PixelBufferTests.bytes(.i420, 32, 16))
      let processor = TestProcessor { _ in small }
      let track = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(device: devices[0]), processor: processor)
      let renderer = FrameStream()
      track.add(videoRenderer: renderer)
      try await track.capturer?.startCapture()
      _ = try await renderer.next("the processed frame") { $0.dimensions == Dimensions(width: 32, height: 16) }
      #expect(processor.count >= 1)
      #expect(track.capturer?.dimensions == Dimensions(width: 32, height: 16))
      try await track.capturer?.stopCapture()
    }
  }

  /// A delegate that records the downgrades it hears.
  @MainActor final class DowngradeDelegate: VideoCapturerDelegate {
    var downgrades: [String] = []
    let heard: AsyncStream<Void>.Continuation
    init(heard: AsyncStream<Void>.Continuation) { self.heard = heard }
    func capturer(_ capturer: VideoCapturer, didDowngradeResolution requested: Dimensions, to actual: Dimensions) {
      MainActor.assertIsolated()
      downgrades.append("\(requested) → \(actual)")
      heard.yield()
    }
  }

  /// Seed 000's "Requested and actual size" through a delegate; a removed delegate hears
  /// nothing more, and one the App lets go is not kept alive by the capturer.
  @Test @MainActor func downgradesReachDelegatesWhichAreHeldWeaklyAndCanBeRemoved() async throws {
    let devices = [try await TestCameras.add("usb-720p-webcam")]
    do {
      let track = LocalVideoTrack.createCameraTrack(
        options: CameraCaptureOptions(device: devices[0], dimensions: .h1080_169))
      let capturer = try #require(track.capturer as? CameraCapturer)
      let (heard, continuation) = AsyncStream.makeStream(of: Void.self)
      let delegate = DowngradeDelegate(heard: continuation)
      let (removedHeard, removedContinuation) = AsyncStream.makeStream(of: Void.self)
      let removed = DowngradeDelegate(heard: removedContinuation)
      weak var released: DowngradeDelegate?
      do {
        let shortLived = DowngradeDelegate(heard: AsyncStream.makeStream(of: Void.self).continuation)
        released = shortLived
        capturer.delegates.add(delegate: shortLived)
      }
      #expect(released == nil, "the capturer holds its delegates weakly")
      capturer.delegates.add(delegate: delegate)
      capturer.delegates.add(delegate: removed)
      capturer.delegates.remove(delegate: removed)
      try await capturer.startCapture()
      try await withDeadline(20, "the delegate to hear the downgrade") { for await _ in heard { return } }
      #expect(delegate.downgrades == ["1920x1080 → 1280x720"])
      #expect(removed.downgrades.isEmpty)
      try await capturer.stopCapture()
      removedContinuation.finish()
      for await _ in removedHeard { Issue.record("the removed delegate heard a downgrade") }
    }
    try await TestCameras.remove(devices)
  }

  // MARK: - The microphone

  @Test func aMicrophoneIdThatMatchesNothingThrows3071() async throws {
    await #expect {
      _ = try await MicrophoneCapturer.captureDevice(id: "no-such-microphone")
    } throws: { error in (error as? DeviceError)?.code.rawValue == 3071 }
    let gone = try await MicrophoneTests.microphone()
    #expect(try await MicrophoneCapturer.captureDevice(id: gone.id) == gone)
    let events = CameraCapturer.deviceEvents
    VirtualDevices.remove(gone.id)
    if try await MicrophoneCapturer.captureDevices().contains(gone) {
      try await withDeadline(20, "the SDK to drop the microphone") {
        for await event in events where event == .removed(gone) { return }
      }
    }
    // Another microphone is present, and is not used in its place.
    let other = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(other.id) }
    let track = LocalAudioTrack.createMicrophoneTrack(options: AudioCaptureOptions(device: gone))
    await #expect {
      try await track.capturer?.startCapture()
    } throws: { error in (error as? DeviceError)?.code == .invalidCustomTrackConfig }
    #expect((track.capturer as? MicrophoneCapturer)?.device == nil)
  }

  @Test func aMicrophoneThatRefusesAccessThrows3018() async throws {
    let device = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(device.id) }
    VirtualDevices.setDenied(device.id, true)
    let track = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: device))
    await #expect {
      try await track.capturer?.startCapture()
    } throws: { error in (error as? DeviceError)?.code.rawValue == 3018 }
  }

  /// The mono presets are captured, and sent, in one channel; the stereo ones in two. The SDP
  /// keeps `opus/48000/2` (RFC 7587) and says which in `stereo` and `sprop-stereo`.
  @Test func monoPresetsAreCapturedAndSentMono() async throws {
    let device = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(device.id) }
    for (preset, channels) in [(AudioCaptureOptions.Preset.speechStandard, 1), (.highQualityStereo, 2)] {
      let track = LocalAudioTrack.createMicrophoneTrack(options: .preset(preset, device: device))
      #expect(track.format == AudioFormat(sampleRate: 48_000, channelCount: channels, sampleFormat: .int16))
      let renderer = AudioStream()
      track.add(audioRenderer: renderer)
      let room = Room()
      try await room.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp())")!)
      _ = try await room.localParticipant?.publish(audioTrack: track)
      let stereo = channels == 2 ? 1 : 0
      #expect(room.sdp.contains("a=rtpmap:111 opus/48000/2"))
      #expect(room.sdp.contains("stereo=\(stereo);sprop-stereo=\(stereo)"))
      try await track.capturer?.startCapture()
      let buffers = renderer.buffers
      let first = try await withDeadline(20, "a buffer of \(preset)") {
        for await buffer in buffers { return buffer }
        throw CancellationError()
      }
      #expect(first.channelCount == channels, "\(preset)")
      try await track.capturer?.stopCapture()
      await room.disconnect()
    }
  }

  // MARK: - Names a port of seed 000 needs

  @Test func theOtherSeed000Names() async throws {
    let options = CameraCaptureOptions()
    #expect(options.autoCorrectOrientation)
    #expect(!options.copyWith(autoCorrectOrientation: false).autoCorrectOrientation)
    #expect(options.copyWith(fps: 15).autoCorrectOrientation)
    let room = Room()
    #expect(room.reportStatistics)
    room.reportStatistics = false
    #expect(!room.reportStatistics)
    let microphone = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(microphone.id) }
    #expect(microphone.localizedName == microphone.name && microphone.localizedName.hasPrefix("Test Mic"))
  }

  /// `set(source:enabled:)` is the device's own switch; `destroy()` switches every device off,
  /// stops the publications and keeps the switches off.
  @Test func setSourceSwitchesAndDestroyEndsTheParticipant() async throws {
    let microphone = try await MicrophoneTests.microphone()
    defer { VirtualDevices.remove(microphone.id) }
    let room = Room()
    try await room.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp(pairs: 2))")!)
    let participant = try #require(room.localParticipant)
    let flags = participant.events
    participant.set(source: .microphone, enabled: true)
    #expect(participant.isMicrophoneActive)
    participant.set(source: .microphone, enabled: false)
    #expect(!participant.isMicrophoneActive)
    participant.set(source: .unknown, enabled: true)
    #expect(!participant.isCameraActive && !participant.isMicrophoneActive && !participant.isScreenShareActive)
    let audio = LocalAudioTrack.createBufferTrack()
    _ = try await participant.publish(audioTrack: audio)
    #expect(room.publications.count == 1)
    participant.set(source: .camera, enabled: true)
    #expect(participant.isCameraActive)
    participant.destroy()
    #expect(!participant.isCameraActive && room.publications.isEmpty)
    participant.setCamera(enabled: true)
    participant.set(source: .microphone, enabled: true)
    #expect(!participant.isCameraActive && !participant.isMicrophoneActive)
    let seen = try await withDeadline(20, "the flags' changes") {
      var seen: [LocalParticipant.Event] = []
      for await flag in flags {
        seen.append(flag)
        if seen.count == 4 { break }
      }
      return seen
    }
    #expect(seen == [.microphoneActive(true), .microphoneActive(false), .cameraActive(true), .cameraActive(false)])
  }

  // MARK: - Buffer tracks

  /// An audio buffer track published, heard by a receiver that opens the sender's SDP.
  @Test func aPublishedAudioBufferTrackIsHeard() async throws {
    let sending = Room()
    try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(FreePorts.rtp())")!)
    let track = LocalAudioTrack.createBufferTrack()
    _ = try await sending.localParticipant?.publish(audioTrack: track, options: AudioPublishOptions(dtx: false))
    let receiving = Room()
    let remote = try await receiving.listen(sdp: sending.sdp, on: "127.0.0.1")
    let sound = AudioStream()
    remote.audioTrack?.add(audioRenderer: sound)
    let capturer = try #require(track.capturer as? AudioBufferCapturer)
    try await capturer.startCapture()
    // 10 ms of a 440 Hz tone at a time, from a task of its own, until a buffer is heard.
    let feeder = Task.detached {
      var phase = 0.0
      while !Task.isCancelled {
        let samples = (0..<960).map { index -> Int16 in
          Int16(10_000 * sin(phase + Double(index / 2) * 2 * .pi * 440 / 48_000))
        }
        phase += 480 * 2 * .pi * 440 / 48_000
        if let buffer = try? AudioPCMBuffer(sampleRate: 48_000, channelCount: 2, samples: samples) {
          capturer.capture(buffer)
        }
        try? await Task.sleep(for: .milliseconds(10))
      }
    }
    defer { feeder.cancel() }
    let buffers = sound.buffers
    let loud: AudioPCMBuffer = try await withDeadline(20, "the tone at the receiver") {
      for await buffer in buffers where (buffer.int16Samples?.max() ?? 0) > 3_000 { return buffer }
      throw CancellationError()
    }
    #expect(loud.sampleRate == 48_000)
    #expect(try #require(remote.audioTrack).statistics.packetsReceived > 0)
    feeder.cancel()
    try await capturer.stopCapture()
    await sending.disconnect()
    await receiving.disconnect()
  }
}

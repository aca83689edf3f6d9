import Foundation
import GStreamer
import RevueSDK
import RevueSDKTestSupport
import RevueTestSupport
import Synchronization
import Testing

/// An audio renderer whose buffers a test awaits.
final class AudioStream: AudioRenderer {
  let buffers: AsyncStream<AudioPCMBuffer>
  private let continuation: AsyncStream<AudioPCMBuffer>.Continuation
  init() {
    (buffers, continuation) = AsyncStream.makeStream(of: AudioPCMBuffer.self, bufferingPolicy: .bufferingNewest(8))
  }
  func render(pcmBuffer: AudioPCMBuffer) { continuation.yield(pcmBuffer) }
}

@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct MicrophoneTests {
  init() { TestEnvironment.prepare() }

  /// A virtual microphone of a fresh name, once the SDK lists it.
  static func microphone(_ signal: VirtualDevices.Signal = .sine(frequency: 440)) async throws -> CaptureDevice {
    try await TestCameras.addMicrophone(signal: signal)
  }

  @Test func noiseConfigRulesOfSeed002() {
    // Left out: on, high-pass off.
    #expect(
      AudioCaptureOptions().processing
        == .init(echoCancellation: true, noiseSuppression: true, autoGainControl: true, highpassFilter: false))
    // nil keeps the preset's value; the music presets turn processing off.
    let music = AudioCaptureOptions(preset: .musicStandard, echoCancellation: nil, noiseSuppression: false)
    #expect(
      music.processing
        == .init(echoCancellation: false, noiseSuppression: false, autoGainControl: true, highpassFilter: false))
    // No noise config: every flag from the preset.
    #expect(!AudioCaptureOptions.preset(.highQualityStereo).processing.isEnabled)
    #expect(
      AudioCaptureOptions.preset(.speechLowQuality).processing
        == .init(echoCancellation: true, noiseSuppression: true, autoGainControl: true, highpassFilter: false))
    #expect(AudioCaptureOptions.preset(.speechStandard, device: nil).highpassFilter == nil)
    #expect(AudioCaptureOptions(highpassFilter: true).processing.highpassFilter)
    let table = AudioCaptureOptions.Preset.allCases.map { "\($0.rawValue) \($0.channelCount) \($0.bitrate / 1000)" }
    #expect(
      table == [
        "speech_low_quality 1 24", "speech_standard 1 24", "music_standard 1 40", "standard_stereo 2 64",
        "high_quality 1 128", "high_quality_stereo 2 192",
      ])
  }

  @Test func microphoneWithVoiceProcessingDeliversTheTrackFormat() async throws {
    let device = try await Self.microphone()
    defer { VirtualDevices.remove(device.id) }
    let track = LocalAudioTrack.createMicrophoneTrack(
      options: AudioCaptureOptions(device: device, highpassFilter: true))
    let renderer = AudioStream()
    track.add(audioRenderer: renderer)
    let capturer = try #require(track.capturer as? MicrophoneCapturer)
    try await capturer.startCapture()
    #expect(capturer.device == device)
    let dsp = try #require(capturer.captureSession?.element(named: "dsp"))
    #expect(try dsp.get("echo-cancel", as: Bool.self))
    #expect(try dsp.get("noise-suppression", as: Bool.self))
    #expect(try dsp.get("gain-control", as: Bool.self))
    #expect(try dsp.get("high-pass-filter", as: Bool.self))
    let buffers = renderer.buffers
    let first = try await withDeadline(20, "a buffer from the microphone") {
      for await buffer in buffers { return buffer }
      throw CancellationError()
    }
    #expect(first.sampleRate == 48_000 && first.channelCount == 1 && first.format == .int16)  // speech: mono
    try await capturer.stopCapture()
    #expect(capturer.device == nil && capturer.captureSession == nil)
  }

  @Test func musicPresetRunsWithoutProcessing() async throws {
    let device = try await Self.microphone(.noise)
    defer { VirtualDevices.remove(device.id) }
    let track = LocalAudioTrack.createMicrophoneTrack(options: .preset(.musicStandard, device: device))
    let capturer = try #require(track.capturer as? MicrophoneCapturer)
    try await capturer.startCapture()
    #expect(capturer.captureSession?.element(named: "dsp") == nil)
    try await capturer.stopCapture()
  }

  /// Uses the default microphone, its own only when no other test has one: it runs alone.
  @Test(.wholeProcess) func setMicrophoneDebouncesLikeTheCamera() async throws {
    let device = try await Self.microphone()
    defer { VirtualDevices.remove(device.id) }
    let participant = Room().localParticipant!
    let capturer = try #require(participant.microphoneTrack.capturer)
    let events = capturer.events
    for index in 0..<20 { participant.setMicrophone(enabled: index % 2 == 1) }
    #expect(participant.isMicrophoneActive)
    try await withDeadline(20, "the microphone to capture") {
      for await event in events where event == .state(.capturing) { return }
    }
    #expect(VirtualDevices.openCount(device.id) <= 2)
    let stopped = capturer.events
    participant.setMicrophone(enabled: false)
    #expect(!participant.isMicrophoneActive)
    try await withDeadline(20, "the microphone to stop") {
      for await event in stopped where event == .state(.idle) { return }
    }
  }
}

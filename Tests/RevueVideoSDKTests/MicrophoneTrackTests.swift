import Foundation
import RevueSDKTestSupport
import RevueTestSupport
import RevueVideoSDK
import Synchronization
import Testing

/// An audio renderer whose buffers a test awaits.
final class AudioBuffers: AudioRenderer {
  let buffers: AsyncStream<AudioPCMBuffer>
  private let continuation: AsyncStream<AudioPCMBuffer>.Continuation

  init() {
    (buffers, continuation) = AsyncStream.makeStream(of: AudioPCMBuffer.self, bufferingPolicy: .bufferingNewest(8))
  }

  func render(pcmBuffer: AudioPCMBuffer) { continuation.yield(pcmBuffer) }
}

/// `createMicrophoneAudioTrack` against virtual microphones.
@Suite(.tier(.pipeline), .serialized, .sharedProcess, .timeLimit(.minutes(1))) struct MicrophoneTrackTests {
  init() { TestEnvironment.prepare() }

  /// The seed's example, as written (it takes the first microphone: it runs alone).
  @Test(.wholeProcess) func seedExampleOpensTheMicrophoneWithItsNoiseConfig() async throws {
    try await Devices.withMicrophone { device in
      try await TestCameras.waitUntilAlone(device)
      var made: CustomStreamTrack?
      do {
        let audioMediaTrack = try await VideoSDK.createMicrophoneAudioTrack(
          encoderConfig: .speech_standard,
          noiseConfig: NoiseConfig(
            noiseSuppression: true,
            echoCancellation: true,
            autoGainControl: true,
            highPassFilter: true
          )
        )
        made = audioMediaTrack
      } catch {
        print("Failed to create custom audio track: \(error)")
      }
      let track = try #require(made)
      #expect(track.device == device && track.videoTrack == nil)
      #expect(track.encoderConfig == .microphone(.speech_standard) && track.microphoneId == nil)
      #expect(track.noiseConfig == NoiseConfig(highPassFilter: true))
      #expect(track.audioPublishOptions?.encoding == AudioEncoding(maxBitrate: 24_000))
      let capturer = try #require(track.audioTrack?.capturer as? MicrophoneCapturer)
      #expect(capturer.device == device && capturer.captureState == .capturing)
      let dsp = try #require(capturer.captureSession?.element(named: "dsp"))
      #expect(try dsp.get("noise-suppression", as: Bool.self) && dsp.get("echo-cancel", as: Bool.self))
      #expect(try dsp.get("gain-control", as: Bool.self) && dsp.get("high-pass-filter", as: Bool.self))
      let renderer = AudioBuffers()
      track.audioTrack?.add(audioRenderer: renderer)
      let buffers = renderer.buffers
      let first = try await withDeadline(10, "a buffer from the microphone") {
        for await buffer in buffers { return buffer }
        throw CancellationError()
      }
      #expect(first.sampleRate == 48_000)
      track.stop()
    }
  }

  @MainActor @Test func microphoneIdPicksTheMicrophoneAndStopClosesIt() async throws {
    try await Devices.withMicrophone { device in
      let track = try await VideoSDK.createMicrophoneAudioTrack(encoderConfig: .music_standard, microphoneId: device.id)
      #expect(track.device == device && track.microphoneId == device.id && track.noiseConfig == nil)
      let capturer = try #require(track.audioTrack?.capturer as? MicrophoneCapturer)
      #expect(capturer.device == device)
      #expect(!capturer.options.processing.isEnabled)  // music_standard: every flag off
      #expect(capturer.captureSession?.element(named: "dsp") == nil)
      #expect(track.audioPublishOptions?.encoding?.maxBitrate == 40_000)
      let recorder = EndedRecorder()
      track.onEnded = recorder.handler
      track.stop()
      #expect(try await recorder.firstCall() == nil)
      #expect(capturer.device == nil && capturer.captureState == .idle)
      #expect {
        try track.checkNotEnded()
      } throws: { ($0 as? VideoSDKError)?.name == "ERROR_CUSTOM_AUDIO_TRACK_ENDED" }
    }
  }

  @Test func microphoneThatRefusesAccessThrows3018() async throws {
    let device = try await TestCameras.addMicrophone("VideoSDK Mic")
    defer { VirtualDevices.remove(device.id) }
    VirtualDevices.setDenied(device.id, true)
    await expectVideoSDKError(3018, "ERROR_MICROPHONE_ACCESS_DENIED_OR_DISMISSED") {
      try await VideoSDK.createMicrophoneAudioTrack(microphoneId: device.id)
    }
  }

  @Test func unknownMicrophoneIdThrows3071() async throws {
    try await Devices.withMicrophone { _ in
      await expectVideoSDKError(3071, "ERROR_INVALID_CUSTOM_TRACK_CONFIG") {
        try await VideoSDK.createMicrophoneAudioTrack(microphoneId: "no-such-microphone")
      }
    }
  }

  @Test func microphonesAreListedWithTheirIds() async throws {
    try await Devices.withMicrophone { device in
      #expect(await VideoSDK.getMics().contains(device))
      #expect(await !VideoSDK.getCameras().contains(device))
    }
  }
}

import Foundation
import RevueSDK
import RevueTestSupport
import Synchronization
import Testing

/// Records every audio buffer rendered.
final class RecordingAudioRenderer: AudioRenderer {
  let buffers = Mutex<[AudioPCMBuffer]>([])
  func render(pcmBuffer: AudioPCMBuffer) { buffers.withLock { $0.append(pcmBuffer) } }
  var frames: Int { buffers.withLock { $0.reduce(0) { $0 + $1.frameLength } } }
}

@Suite(.tier(.pipeline), .sharedProcess, .timeLimit(.minutes(1))) struct AudioBufferCapturerTests {
  init() { TestEnvironment.prepare() }

  /// `milliseconds` of a 440 Hz tone.
  static func tone(rate: Int, channels: Int, milliseconds: Int, float: Bool) throws -> AudioPCMBuffer {
    let frames = rate * milliseconds / 1000
    let values = (0..<(frames * channels)).map { sin(Double($0 / channels) * 2 * .pi * 440 / Double(rate)) * 0.5 }
    return float
      ? try AudioPCMBuffer(sampleRate: rate, channelCount: channels, samples: values.map { Float($0) })
      : try AudioPCMBuffer(sampleRate: rate, channelCount: channels, samples: values.map { Int16($0 * 32767) })
  }

  static func startedTrack() async throws -> (LocalAudioTrack, AudioBufferCapturer, RecordingAudioRenderer) {
    let track = LocalAudioTrack.createBufferTrack()
    let capturer = try #require(track.capturer as? AudioBufferCapturer)
    let renderer = RecordingAudioRenderer()
    track.add(audioRenderer: renderer)
    try await capturer.startCapture()
    return (track, capturer, renderer)
  }

  @Test func idleCapturerDropsEveryBuffer() async throws {
    let track = LocalAudioTrack.createBufferTrack()
    let capturer = try #require(track.capturer as? AudioBufferCapturer)
    let renderer = RecordingAudioRenderer()
    track.add(audioRenderer: renderer)
    capturer.capture(try Self.tone(rate: 48_000, channels: 2, milliseconds: 10, float: false))
    #expect(renderer.frames == 0)
    let states = capturer.events
    try await capturer.startCapture()
    capturer.capture(try Self.tone(rate: 48_000, channels: 2, milliseconds: 10, float: false))
    #expect(renderer.frames == 480)
    try await capturer.stopCapture()
    let seen = try await withDeadline(20, "the capturer's two state changes") {
      var seen: [AudioCapturer.Event] = []
      for await event in states {
        seen.append(event)
        if seen.count == 2 { break }
      }
      return seen
    }
    #expect(seen == [.state(.capturing), .state(.idle)])
  }

  @Test func anyFormatIsConvertedToTheTracksFormat() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    #expect(track.format == AudioFormat(sampleRate: 48_000, channelCount: 2, sampleFormat: .int16))
    for _ in 0..<10 { capturer.capture(try Self.tone(rate: 44_100, channels: 1, milliseconds: 20, float: true)) }
    let buffers = renderer.buffers.withLock { $0 }
    #expect(!buffers.isEmpty)
    #expect(buffers.allSatisfy { $0.sampleRate == 48_000 && $0.channelCount == 2 && $0.format == .int16 })
    // 200 ms in, about 200 ms out (the resampler holds back a few samples).
    #expect(abs(renderer.frames - 9_600) < 200, "\(renderer.frames) frames")
    let peak = buffers.flatMap { $0.int16Samples ?? [] }.map { abs(Int($0)) }.max() ?? 0
    #expect(peak > 12_000 && peak < 20_000, "the tone's level survives: peak \(peak)")
    try await capturer.stopCapture()
  }

  @Test func aFormatChangeMidStreamIsFollowed() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    defer { withExtendedLifetime(track) {} }
    capturer.capture(try Self.tone(rate: 48_000, channels: 2, milliseconds: 100, float: false))
    let first = renderer.frames
    capturer.capture(try Self.tone(rate: 16_000, channels: 1, milliseconds: 100, float: false))
    capturer.capture(try Self.tone(rate: 96_000, channels: 6, milliseconds: 100, float: true))
    capturer.capture(try Self.tone(rate: 48_000, channels: 2, milliseconds: 100, float: false))
    #expect(first > 4_000)
    #expect(abs(renderer.frames - 19_200) < 600, "\(renderer.frames) frames for 400 ms")
    #expect(renderer.buffers.withLock { $0 }.allSatisfy { $0.sampleRate == 48_000 && $0.channelCount == 2 })
    try await capturer.stopCapture()
  }

  @Test func mutedTrackRendersNothing() async throws {
    let (track, capturer, renderer) = try await Self.startedTrack()
    try await track.mute()
    capturer.capture(try Self.tone(rate: 48_000, channels: 2, milliseconds: 10, float: false))
    #expect(renderer.frames == 0)
    try await track.unmute()
    capturer.capture(try Self.tone(rate: 48_000, channels: 2, milliseconds: 10, float: false))
    #expect(renderer.frames == 480)
    try await capturer.stopCapture()
  }
}

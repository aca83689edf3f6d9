import Synchronization

/// Measures the lip sync of a received stream that carries the sync test signal (white flashes
/// and beeps, see ``VirtualDevices/Signal/sync``): each onset is placed at the sender's capture
/// time of the media it is in (from the RTP timestamps and the sender's RTCP reports, the
/// mapping a receiver that syncs the two streams plays them by), and each beep is paired with
/// the flash within half a second of it.
final class SyncMeter: Sendable {
  private struct State {
    /// Onsets not paired yet, in seconds of the sender's clock.
    var flashes: [Double] = []
    var beeps: [Double] = []
    var bright = false
    /// The sender time up to which the audio was quiet, in seconds.
    var quietUntil: Double?
    var quietSince: Double?
    /// The latest skews (beep minus flash), in seconds.
    var skews: [Double] = []
  }

  private let state = Mutex(State())

  /// A frame brighter than this mean luma is a flash.
  private static let brightLuma = 200
  /// A sample above this fraction of full scale is sound.
  private static let loud = 0.1
  /// Quiet this long before a sound makes it an onset.
  private static let quietBeforeOnset = 0.2
  private static let pairWindow = 0.5
  private static let keptSkews = 9

  /// The median skew of the latest pairs, in milliseconds.
  var skewMilliseconds: Double? {
    state.withLock { state in
      guard !state.skews.isEmpty else { return nil }
      return state.skews.sorted()[state.skews.count / 2] * 1000
    }
  }

  /// Looks at a decoded frame captured at `captured` (NTP format): a frame of mean luma above
  /// 200 after one below is a flash. Reads 64 pixels of the frame.
  func video(_ frame: PixelBuffer, captured: UInt64) {
    guard let bright = Self.isFlash(frame) else { return }
    state.withLock { state in
      defer { state.bright = bright }
      guard bright, !state.bright else { return }
      state.flashes.append(Self.seconds(captured))
      Self.pair(&state)
    }
  }

  /// Looks at decoded audio (16-bit) whose first sample was captured at `captured` (NTP
  /// format): the first loud sample after 200 ms of quiet is a beep.
  func audio(_ buffer: AudioPCMBuffer, captured: UInt64) {
    guard let samples = buffer.int16Samples else { return }
    let start = Self.seconds(captured)
    let channels = buffer.channelCount
    let threshold = Int(Self.loud * Double(Int16.max))
    var onset: Double?
    state.withLock { state in
      for frame in 0..<buffer.frameLength {
        let time = start + Double(frame) / Double(buffer.sampleRate)
        if abs(Int(samples[frame * channels])) > threshold {
          if let since = state.quietSince, time - since >= Self.quietBeforeOnset, onset == nil { onset = time }
          state.quietSince = nil
        } else if state.quietSince == nil {
          state.quietSince = time
        }
      }
      if let onset {
        state.beeps.append(onset)
        Self.pair(&state)
      }
    }
  }

  /// Whether `frame` (4:2:0) is a flash: the mean luma of 64 pixels spread over it is above
  /// 200. Nil when its pixels cannot be read.
  static func isFlash(_ frame: PixelBuffer) -> Bool? {
    let luma = try? frame.withPlane(0) { bytes, plane -> Int in
      var sum = 0
      for row in 0..<8 {
        let offset = (frame.height * (2 * row + 1) / 16) * plane.stride
        for column in 0..<8 { sum += Int(bytes[offset + frame.width * (2 * column + 1) / 16]) }
      }
      return sum / 64
    }
    return luma.map { $0 > brightLuma }
  }

  /// Pairs the latest flash and beep when they are close; forgets onsets too old to pair.
  private static func pair(_ state: inout State) {
    if let flash = state.flashes.last, let beep = state.beeps.last, abs(beep - flash) < pairWindow {
      state.skews.append(beep - flash)
      if state.skews.count > keptSkews { state.skews.removeFirst() }
      state.flashes.removeAll()
      state.beeps.removeAll()
      return
    }
    let latest = max(state.flashes.last ?? 0, state.beeps.last ?? 0)
    state.flashes.removeAll { latest - $0 > pairWindow }
    state.beeps.removeAll { latest - $0 > pairWindow }
  }

  /// An NTP time (seconds since 1900 in the high 32 bits) in seconds.
  private static func seconds(_ ntp: UInt64) -> Double {
    Double(ntp >> 32) + Double(ntp & 0xFFFF_FFFF) / 4_294_967_296
  }
}

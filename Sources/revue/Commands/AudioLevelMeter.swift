import Foundation
import RevueSDK
import Synchronization

/// The level of the audio a receiver decodes, for its status lines: the RMS of the samples
/// rendered since the previous read, in dB relative to full scale (a 1 kHz sine at an eighth of
/// full scale reads -21; silence reads nothing).
final class AudioLevelMeter: AudioRenderer {
  private let sums = Mutex((squares: 0.0, count: 0))

  /// Adds the buffer's samples (16-bit, the receiver's format) to the sums.
  func render(pcmBuffer: AudioPCMBuffer) {
    guard let samples = pcmBuffer.int16Samples else { return }
    let squares = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
    sums.withLock { $0 = ($0.squares + squares, $0.count + samples.count) }
  }

  /// The level since the previous read, in dBFS; nil when no audio came or it was silent.
  func read() -> Double? {
    let (squares, count) = sums.withLock { sums in
      defer { sums = (0, 0) }
      return sums
    }
    guard count > 0, squares > 0 else { return nil }
    return 20 * log10((squares / Double(count)).squareRoot() / 32_768)
  }
}

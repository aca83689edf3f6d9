import Foundation
import GStreamer
import Synchronization

/// The lip-sync test signal of the virtual devices, as broadcast test generators make it: once
/// a second a full-frame white flash (one frame) from the virtual cameras and a 1 kHz beep
/// (50 ms) from a virtual microphone of signal ``VirtualDevices/Signal/sync``, both captured at
/// the same instant; otherwise the cameras' usual pattern and silence. A receiver that plays
/// them in sync shows the flash as the beep starts.
///
/// The instant is the capture time, on the system clock, of the first camera frame of each
/// second: a camera announces it when the second before begins (a camera's frames come on a
/// fixed grid), and the microphone starts the beep on that sample. With several cameras, the
/// beeps follow the first that runs (then, once it stops, the next); with none, the beep starts
/// on the whole second.
enum SyncSignal {
  /// How long a beep lasts.
  static let beepLength: UInt64 = 50_000_000
  /// The beep's frequency in hertz.
  static let beepFrequency = 1000.0
  /// The beep's amplitude (full scale is 1).
  static let beepAmplitude = 0.5

  private static let second: UInt64 = 1_000_000_000

  private struct State {
    /// Flash times (ns on the system clock) by the second they flash in.
    var flashes: [UInt64: UInt64] = [:]
    /// The camera whose flashes the beeps follow, and when it last said so: the first to run,
    /// until it stops for half a second (as after a switch); other cameras flash on their own grid.
    var leader: (camera: Int, time: UInt64)?
    var cameras = 0
  }

  private static let state = Mutex(State())
  /// When a microphone of the signal last captured audio (0: never): cameras flash only while
  /// one runs, and do nothing else for the signal until one ran.
  private static let heard = Atomic<UInt64>(0)

  /// Whether the cameras flash at `time`: a microphone of the signal captured in the half second before.
  static func isOn(at time: UInt64) -> Bool {
    let heard = heard.load(ordering: .relaxed)
    return heard != 0 && time < heard + second / 2
  }

  /// Where the beep of second `n` starts: the flash announced for it, or the whole second.
  static func beepStart(second n: UInt64) -> UInt64 {
    state.withLock { $0.flashes[n] } ?? n * second
  }

  // MARK: - Cameras

  /// Makes `source` (a `videotestsrc`) flash while the signal is on: from a probe on its pad,
  /// it announces each second's flash and turns the pattern white for exactly that frame.
  static func attachFlash(to source: Element) {
    guard let pad = source.staticPad("src") else { return }
    let white = Locked(false)
    let camera = state.withLock { state in
      defer { state.cameras += 1 }
      return state.cameras
    }
    pad.addProbe(.buffer) { pad, info in
      // Until a microphone of the signal ran, a camera's frames pass untouched and unread.
      guard heard.load(ordering: .relaxed) != 0, let element = pad.parentElement, let pts = info.buffer?.pts,
        let period = framePeriod(of: pad)
      else { return .ok }
      let time = pts.nanoseconds &+ element.baseTime.nanoseconds
      let next = time + period
      var flashNext = false
      if isOn(at: time) {
        // The first frame of the coming second, on this camera's grid.
        let upcoming = time / second + 1
        let flash = time + (upcoming * second - time + period - 1) / period * period
        state.withLock { state in
          if let leader = state.leader, leader.camera != camera, time < leader.time + second / 2 { return }
          state.leader = (camera, time)
          state.flashes[upcoming] = flash
          if state.flashes.count > 4 { state.flashes = state.flashes.filter { $0.key + 3 > upcoming } }
        }
        flashNext = flash == next
      }
      // The pattern applies to the next frame the source makes, once this probe returns.
      let changed = white.value.withLock { white in
        defer { white = flashNext }
        return white != flashNext
      }
      if changed { try? source.set("pattern", Value.enumeration(flashNext ? "white" : "smpte")) }
      return .ok
    }
  }

  /// The duration of one frame of the caps on `pad`.
  private static func framePeriod(of pad: Pad) -> UInt64? {
    guard let rate = pad.currentCaps?.structure(at: 0).get("framerate", as: Fraction.self), rate.numerator > 0
    else { return nil }
    return UInt64(rate.denominator) * second / UInt64(rate.numerator)
  }

  // MARK: - Microphones

  /// Makes `source` (an `audiotestsrc` of zeros, 16-bit samples) beep on each flash, while it runs.
  static func attachBeep(to source: Element) {
    guard let pad = source.staticPad("src") else { return }
    pad.addProbe(.buffer) { pad, info in
      guard let element = pad.parentElement, var buffer = info.buffer, let pts = buffer.pts,
        let format = pad.currentCaps?.structure(at: 0), let rate = format.get("rate", as: Int.self),
        let channels = format.get("channels", as: Int.self)
      else { return .ok }
      let start = pts.nanoseconds &+ element.baseTime.nanoseconds
      let frames = buffer.size / (2 * channels)
      let end = start + UInt64(frames) * second / UInt64(rate)
      heard.store(start, ordering: .relaxed)
      // The beeps that may overlap this buffer: the one of its own second and the one before.
      let beeps = Set([start / second, end / second, start / second &- 1]).map { beepStart(second: $0) }
        .filter { $0 < end && $0 + beepLength > start }
      guard !beeps.isEmpty else { return .ok }
      _ = try? buffer.withUnsafeMutableBytes { bytes in
        let samples = bytes.bindMemory(to: Int16.self)
        for frame in 0..<frames {
          let time = start + UInt64(frame) * second / UInt64(rate)
          guard let beep = beeps.first(where: { time >= $0 && time < $0 + beepLength }) else { continue }
          let phase = 2 * Double.pi * beepFrequency * Double(time - beep) / Double(second)
          let value = Int16(sin(phase) * beepAmplitude * Double(Int16.max))
          for channel in 0..<channels { samples[frame * channels + channel] = value }
        }
      }
      // audiotestsrc marks its silence a gap, which the elements after it would skip.
      buffer.flags.remove(.gap)
      info.buffer = buffer
      return .ok
    }
  }
}

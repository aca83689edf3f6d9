import GStreamer
import Synchronization

/// Which simulcast layer of a broadcast one viewer is sent, from the target bitrate of that
/// viewer's congestion control (its receiver reports: loss, round-trip time; ``BitrateController``):
/// the largest layer whose bitrate the target carries, the smallest whatever it says, so that a
/// viewer's picture never stops.
///
/// Down at once, as far as needed. Up one layer at a time, once the target has the next layer's
/// bitrate and a tenth more, and only ``upWait`` after the last switch down: with no probing of
/// the path, a switch up is the probe, and one that fails (a switch down again within
/// ``failedProbeWindow``) doubles the wait, up to ``longestUpWait``; a layer held for
/// ``failedProbeWindow`` resets it. A viewer behind a path that carries only a small layer is
/// tried on the next one up after 8, 16, 32, then every 64 s, for a second or so each time.
///
/// The viewer may bound it (WHEP's layer selection, ``bound(largest:target:)``): then it is sent
/// the largest layer its path carries that is no larger than the one it asked for.
///
/// Pure: the time of each update is given.
struct ViewerLayerChoice: Sendable {
  /// The shortest wait between a switch down and the next switch up.
  static let shortestUpWait = Duration.seconds(8)
  /// The longest.
  static let longestUpWait = Duration.seconds(64)
  /// A switch up followed by a switch down within this long failed.
  static let failedProbeWindow = Duration.seconds(10)

  /// The layers' bitrates, the full size first.
  let bitrates: [Int]
  /// The layer sent now (0: the full size).
  private(set) var layer = 0
  /// The largest layer the viewer takes (0: any).
  private(set) var largest = 0
  /// The wait before the next switch up.
  private(set) var upWait = shortestUpWait
  private var lastDown: Duration?
  private var lastUp: Duration?

  /// A choice between layers of `bitrates` (the full size first), starting on the full size.
  init(bitrates: [Int]) { self.bitrates = bitrates }

  /// Takes in the target at `time`; returns the layer to send when it changes.
  mutating func update(target: Int, at time: Duration) -> Int? {
    if let lastUp, time - lastUp >= Self.failedProbeWindow {
      upWait = Self.shortestUpWait
      self.lastUp = nil
    }
    let fits = max(largest, bitrates.firstIndex { $0 <= target } ?? bitrates.count - 1)
    if fits > layer {
      if let lastUp, time - lastUp < Self.failedProbeWindow { upWait = min(upWait * 2, Self.longestUpWait) }
      lastUp = nil
      lastDown = time
      layer = fits
      return layer
    }
    guard layer > largest, Double(target) >= Double(bitrates[layer - 1]) * SimulcastAllocation.resumeHeadroom,
      lastDown.map({ time - $0 >= upWait }) ?? true
    else { return nil }
    layer -= 1
    lastUp = time
    return layer
  }

  /// Takes the largest layer the viewer asks for (0: any, as at first), given the target now
  /// (nil before its first report); returns the layer to send when it changes: the asked one at
  /// once when a larger one is sent, the largest the target carries (up to the asked one) at
  /// once when a smaller one is: the viewer asked, there is no probe to wait for.
  mutating func bound(largest asked: Int, target: Int?) -> Int? {
    largest = min(max(asked, 0), bitrates.count - 1)
    let carried = target.map { target in bitrates.firstIndex { $0 <= target } ?? bitrates.count - 1 } ?? layer
    let chosen = max(largest, min(layer, carried))
    guard chosen != layer else { return nil }
    layer = chosen
    lastUp = nil
    return layer
  }
}

/// The encoded frames of one viewer of a broadcast with simulcast layers: from the layer it is
/// sent now to its session's feed, the others dropped. A new layer is taken at its first
/// keyframe (a decoder cannot start a layer anywhere else), the one before sent up to then,
/// so that the picture does not stop while the keyframe is on its way.
///
/// Each layer's encoder hands its frames through a ``gate(_:)`` of its own. The layers encode
/// the same captured frames at their own pace: a smaller one's frame comes a few milliseconds
/// before the full size's of the same capture time. A frame's capture time is moved to a
/// millisecond after the last one sent when it is not later (a switch to a slower layer),
/// since a feed drops a frame that is not later than the last (``SourceFeed``).
final class LayerSwitch: Sendable {
  private struct State {
    var layer: Int
    var pending: Int?
    var lastSent: ClockTime?
    var switches = 0
  }
  private let state: Mutex<State>
  private let output: any MediaSink
  private let switched: @Sendable (Int) -> Void

  /// A switch that sends `layer`'s frames to `output` (the viewer's session's feed), and tells
  /// `switched` of each new layer as its first frame goes.
  init(to output: any MediaSink, layer: Int = 0, switched: @escaping @Sendable (Int) -> Void = { _ in }) {
    self.output = output
    self.switched = switched
    state = Mutex(State(layer: layer))
  }

  /// The layer sent now.
  var layer: Int { state.withLock { $0.layer } }

  /// Switches so far.
  var switches: Int { state.withLock { $0.switches } }

  /// Sends `layer` from its next keyframe on (nothing when it is sent already).
  func request(_ layer: Int) {
    state.withLock { $0.pending = $0.layer == layer ? nil : layer }
  }

  /// The media sink through which `layer`'s encoder hands its frames.
  func gate(_ layer: Int) -> some MediaSink { Gate(owner: self, layer: layer) }

  /// Takes a frame of `layer`: sends it on when the layer is the one sent, or the one asked
  /// for and the frame is its keyframe.
  fileprivate func take(_ buffer: Buffer, caps: Caps, captured: ClockTime?, layer: Int) {
    var switchedNow = false
    let stamp: ClockTime?? = state.withLock { state in
      if layer == state.pending, !buffer.flags.contains(.deltaUnit) {
        state.layer = layer
        state.pending = nil
        state.switches += 1
        switchedNow = true
      }
      guard layer == state.layer else { return .none }
      guard let captured else { return .some(nil) }
      var stamp = captured
      if let last = state.lastSent, stamp <= last {
        stamp = ClockTime(nanoseconds: last.nanoseconds + 1_000_000)
      }
      state.lastSent = stamp
      return .some(stamp)
    }
    guard case .some(let captured) = stamp else { return }
    output.send(buffer, caps: caps, capturedAt: captured)
    if switchedNow { switched(layer) }
  }

  /// One layer's way in.
  private final class Gate: MediaSink {
    let owner: LayerSwitch
    let layer: Int
    init(owner: LayerSwitch, layer: Int) {
      self.owner = owner
      self.layer = layer
    }
    func send(_ buffer: Buffer, caps: Caps, capturedAt captured: ClockTime?) {
      owner.take(buffer, caps: caps, captured: captured, layer: layer)
    }
    func signal(muted: Bool) {}
  }
}

import Foundation
import GStreamer
import Synchronization

/// The send path's pacer (libwebrtc's `PacedSender`): a stream's RTP packets leave at most at
/// ``rate`` bits per second, from a queue on a thread of its own, so that a frame larger than the
/// path's bottleneck buffer (a keyframe) does not reach it as one burst.
///
///     payloader ! … ! queue name=pacer-queue ! identity name=pacer ! transport
///
/// The `identity` takes the payloader's lists of packets one packet at a time (it has no list
/// function of its own, so GStreamer hands it each buffer of a list), and a probe on its output
/// holds each packet, on the queue's thread, until a token bucket filled at ``rate`` has its bits.
/// The bucket holds ``burst`` of the rate, so that a stream under its rate (every frame of a
/// stream at its target) passes with no wait: only what comes faster than the rate is held. The
/// encoder's thread hands its packets to the queue and goes on; only when the queue holds
/// ``queueMilliseconds`` of media does it wait, and the `appsrc` before it drops raw frames (as
/// libwebrtc drops frames when its pacer's queue is long), never a packet.
///
/// ``BitrateAdaptation`` sets the rate to ``factor`` times the stream's target at each change.
/// A WHIP session's single layer is paced (``WHIPPublication``); simulcast layers, RTP and RTSP
/// are not yet.
final class Pacer: Sendable {
  /// The pacing rate as a multiple of the target: libwebrtc's pacing factor is 2.5.
  static let factor = 2.5

  /// How long a burst at the rate the bucket holds: a frame's time at 30 fps, so that a frame
  /// no larger than the rate allows passes at once.
  static let burst = Duration.milliseconds(33)

  /// The most media the queue holds before the encoder's thread waits (and its `appsrc` drops
  /// raw frames).
  static let queueMilliseconds = 200

  private struct State {
    var rate: Double
    /// Bits the bucket holds now.
    var tokens: Double
    var last: ContinuousClock.Instant?
    /// Packets held so far, and their total wait.
    var held = 0
    var waited = Duration.zero
  }
  private let state: Mutex<State>
  /// Packets of frames stamped before this running time, in nanoseconds, are dropped: none by
  /// default; all while ``hold()`` holds them (``UInt64/max``).
  private let opensAt = Atomic<UInt64>(0)

  /// A pacer at `rate` bits per second, its bucket full.
  init(rate: Int) {
    let rate = Double(max(1, rate))
    state = Mutex(State(rate: rate, tokens: rate * Self.burstSeconds))
  }

  private static var burstSeconds: Double { Double(burst / .microseconds(1)) / 1e6 }

  /// Follows a new rate.
  func setRate(_ bitsPerSecond: Int) { state.withLock { $0.rate = Double(max(1, bitsPerSecond)) } }

  /// The rate now, in bits per second.
  var rate: Int { state.withLock { Int($0.rate) } }

  /// Packets held so far, and how long in all.
  var held: (packets: Int, waited: Duration) { state.withLock { ($0.held, $0.waited) } }

  /// How long a packet of `bytes` that comes at `now` waits before it leaves; its bits are
  /// taken from the bucket (which may go below zero: the packets after it wait for them).
  func wait(forPacketOf bytes: Int, at now: ContinuousClock.Instant) -> Duration {
    state.withLock { state in
      let full = state.rate * Self.burstSeconds
      if let last = state.last {
        let earned = state.rate * max(0, Double((now - last) / .microseconds(1)) / 1e6)
        state.tokens = min(full, state.tokens + earned)
      }
      state.last = now
      state.tokens -= Double(bytes * 8)
      guard state.tokens < 0 else { return .zero }
      let wait = Duration.microseconds(Int64(-state.tokens / state.rate * 1e6))
      state.held += 1
      state.waited += wait
      return wait
    }
  }

  /// The queue and the `identity` that pace, to put after a stream's payloader.
  static var chain: ElementChain {
    [
      ElementRecipe(
        "queue", name: "pacer-queue",
        [
          "max-size-buffers": .int(0), "max-size-bytes": .int(0),
          "max-size-time": .uint(UInt(queueMilliseconds) * 1_000_000),
        ]),
      ElementRecipe("identity", name: "pacer", ["silent": .bool(true)]),
    ]
  }

  /// Drops every packet from now on, until ``release(fromKeyframeOf:)``: for a transport that
  /// cannot send yet (a WHIP session before its connection is up), which would otherwise get
  /// the frames encoded meanwhile as one burst, stale, when it can.
  func hold() { opensAt.store(.max, ordering: .relaxed) }

  /// Lets packets through again from the next keyframe `encoder` makes, which it is asked for
  /// now; the frames before it are dropped.
  func release(fromKeyframeOf encoder: Element?) {
    guard let output = encoder?.staticPad("src") else { return opensAt.store(0, ordering: .relaxed) }
    output.addProbe(.buffer) { [weak self] _, info in
      guard let buffer = info.buffer, !buffer.flags.contains(.deltaUnit), let pts = buffer.pts else { return .ok }
      self?.opensAt.store(pts.nanoseconds, ordering: .relaxed)
      return .remove
    }
    VideoEncoder.requestKeyframe(upstreamOf: output)
  }

  /// Paces the packets that leave `identity` (the chain's `pacer`, made from ``chain``).
  func attach(to identity: Element?) {
    identity?.staticPad("src")?.addProbe([.buffer, .bufferList]) { [weak self] _, info in
      guard let self else { return .ok }
      let opensAt = opensAt.load(ordering: .relaxed)
      if opensAt > 0, (info.buffer?.pts?.nanoseconds ?? .max) < opensAt || opensAt == .max { return .drop }
      let bytes = info.listSizes?.reduce(0, +) ?? info.buffer?.size ?? 0
      // At most one packet's time at the rate: 130 ms for the largest packet at the least target.
      let wait = wait(forPacketOf: bytes, at: .now)
      if wait > .zero { Thread.sleep(forTimeInterval: Double(wait / .microseconds(1)) / 1e6) }
      return .ok
    }
  }
}

import GStreamer
import Synchronization

/// The congestion control of one video stream of a sender: each receiver report on the stream
/// goes to its ``BitrateController``, whose target is set on the stream's encoder as it
/// changes, and whose halved frame rate drops every other frame before the encoder.
///
/// Made by the publication (one per stream, when ``VideoPublishOptions/adaptiveBitrate`` is
/// on) and handed to ``RTPSender/Stream``; the sender attaches the encoder and reports each
/// receiver report (on the thread that receives RTCP).
final class BitrateAdaptation: Sendable {
  private let controller: Mutex<BitrateController>
  private let encoder = Mutex<Element?>(nil)
  /// Shared with the probe on the encoder's input (which must not hold the encoder).
  private let frames = FrameHalving()
  /// Where the reports' times count from.
  private let origin = ContinuousClock.now

  /// A stream of at most `ceiling` bits per second, which starts there; below `halvingFloor`
  /// (nil: never) every other frame is dropped.
  init(ceiling: Int, halvingFloor: Int?) {
    controller = Mutex(BitrateController(ceiling: ceiling, halvingFloor: halvingFloor))
  }

  /// The target now and why it last changed.
  var state: (target: Int, reason: BitrateChangeReason, halvesFrameRate: Bool) {
    controller.withLock { ($0.target, $0.reason, $0.halvesFrameRate) }
  }

  /// Makes `encoder` the one whose bitrate follows the target, and drops every other frame at
  /// its input while the frame rate is halved.
  func attach(to encoder: Element?) {
    guard let encoder else { return }
    self.encoder.withLock { $0 = encoder }
    let frames = frames
    encoder.staticPad("sink")?.addProbe(.buffer) { _, _ in frames.passes() ? .ok : .drop }
  }

  /// Takes in a receiver report on the stream that arrived at `arrival` (the middle 32 bits of
  /// the NTP time, for its round-trip time), with the stream's counters then; sets the encoder's
  /// bitrate when the target changed.
  func reported(_ block: RTCPReportBlock, arrival: UInt32, sent counters: RTPSender.Counters) {
    take(
      BitrateController.Report(
        time: ContinuousClock.now - origin, fractionLost: block.fractionLost, packetsLost: Int(block.packetsLost),
        highestSequence: block.highestSequence, roundTrip: block.roundTrip(arrival: arrival),
        jitter: .microseconds(Int64(block.jitter) * 1_000_000 / 90_000), bytesSent: counters.bytesSent,
        packetsSent: counters.packetsSent))
  }

  /// Takes in a report; sets the encoder's bitrate when the target changed.
  func take(_ report: BitrateController.Report) {
    let (changed, state) = controller.withLock { controller in
      (controller.update(report), (controller.target, controller.reason, controller.halvesFrameRate))
    }
    guard changed else { return }
    frames.halved.store(state.2, ordering: .relaxed)
    guard let encoder = encoder.withLock({ $0 }) else { return }
    Self.setBitrate(state.0, of: encoder)
    RevueLog.log(
      .debug, "Publication",
      "\(encoder.factoryName ?? "encoder") target \(state.0 / 1000) kb/s (\(state.1))"
        + (state.2 ? ", half the frame rate" : ""))
  }

  /// Sets `encoder`'s bitrate property to `bitrate` bits per second, in its unit: `vp8enc`'s
  /// `target-bitrate` and `openh264enc`'s `bitrate` are in bit/s, `x264enc`'s `bitrate` in
  /// kbit/s. All three take a new bitrate while playing (vp8enc reconfigures libvpx at once,
  /// x264enc at its next frame).
  static func setBitrate(_ bitrate: Int, of encoder: Element) {
    do {
      switch encoder.factoryName {
      case "vp8enc": try encoder.set("target-bitrate", bitrate)
      case "x264enc": try encoder.set("bitrate", max(1, (bitrate + 500) / 1000))
      case "openh264enc": try encoder.set("bitrate", bitrate)
      default: return
      }
    } catch {
      RevueLog.log(.warning, "Publication", "cannot set the bitrate of \(encoder.name): \(error)")
    }
  }
}

/// Whether the frame rate is halved, and which frames pass meanwhile: every other one.
private final class FrameHalving: Sendable {
  let halved = Atomic(false)
  private let count = Atomic(0)

  /// Whether the next frame goes to the encoder.
  func passes() -> Bool {
    guard halved.load(ordering: .relaxed) else { return true }
    return count.wrappingAdd(1, ordering: .relaxed).oldValue % 2 == 0
  }
}

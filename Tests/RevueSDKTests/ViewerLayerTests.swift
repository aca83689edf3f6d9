import GStreamer
import RevueTestSupport
import Synchronization
import Testing

@testable import RevueSDK

/// Issue 28: with simulcast, each WebRTC viewer of a broadcast is sent the layer its path
/// carries, chosen from its own session's congestion control.
@Suite(.tier(.unit), .sharedProcess) struct ViewerLayerChoiceTests {
  /// 720p, 360p and 180p at LiveKit's bitrates.
  let bitrates = [2_000_000, 300_000, 120_000]

  @Test func aViewerStartsOnTheFullSizeAndGoesDownAtOnceAsFarAsNeeded() {
    var choice = ViewerLayerChoice(bitrates: bitrates)
    #expect(choice.layer == 0)
    #expect(choice.update(target: 2_000_000, at: .seconds(1)) == nil)
    #expect(choice.update(target: 600_000, at: .seconds(2)) == 1)
    // Below the smallest: the smallest, never nothing.
    #expect(choice.update(target: 50_000, at: .seconds(3)) == 2)
    #expect(choice.update(target: 10_000, at: .seconds(4)) == nil && choice.layer == 2)
  }

  /// WHEP's layer selection: a viewer that asks for a layer is sent no larger one, and the
  /// largest its path carries up to it, at once both ways; asking for any gives the choice back.
  @Test func aViewersAskedLayerBoundsWhatItsPathCarries() {
    var choice = ViewerLayerChoice(bitrates: bitrates)
    // On the full size, asks for 180p: at once.
    #expect(choice.bound(largest: 2, target: nil) == 2)
    // A path that carries everything: still 180p.
    #expect(choice.update(target: 5_000_000, at: .seconds(20)) == nil && choice.layer == 2)
    // Asks for 360p: at once, the path carries it.
    #expect(choice.bound(largest: 1, target: 5_000_000) == 1)
    // A congested path still goes below the asked layer, and comes back up to it, not above.
    #expect(choice.update(target: 100_000, at: .seconds(21)) == 2)
    #expect(choice.update(target: 5_000_000, at: .seconds(40)) == 1)
    #expect(choice.update(target: 5_000_000, at: .seconds(60)) == nil && choice.layer == 1)
    // Any layer again: the largest the target carries, at once.
    #expect(choice.bound(largest: 0, target: 5_000_000) == 0)
    // A layer out of range is the smallest.
    #expect(choice.bound(largest: 7, target: 5_000_000) == 2 && choice.largest == 2)
  }

  @Test func upOneLayerAtATimeWithHeadroomAndOnlyAfterTheWait() {
    var choice = ViewerLayerChoice(bitrates: bitrates)
    #expect(choice.update(target: 100_000, at: .seconds(1)) == 2)
    // Room for 360p, but within the wait after the switch down.
    #expect(choice.update(target: 5_000_000, at: .seconds(5)) == nil)
    // 360p's bitrate exactly is not enough: a tenth more is needed.
    #expect(choice.update(target: 300_000, at: .seconds(10)) == nil)
    #expect(choice.update(target: 5_000_000, at: .seconds(10)) == 1)
    // One layer at a time, and each switch up waits after the last switch down only.
    #expect(choice.update(target: 5_000_000, at: .seconds(10.5)) == 0)
  }

  @Test func aSwitchUpThatFailsDoublesTheWaitAndAHeldLayerResetsIt() {
    var choice = ViewerLayerChoice(bitrates: bitrates)
    var time = Duration.seconds(1)
    #expect(choice.update(target: 400_000, at: time) == 1)
    var waits: [Duration] = []
    for _ in 0..<5 {
      waits.append(choice.upWait)
      time += choice.upWait
      #expect(choice.update(target: 2_500_000, at: time) == 0)
      time += .seconds(1)
      #expect(choice.update(target: 400_000, at: time) == 1)
    }
    #expect(waits == [8, 16, 32, 64, 64].map { Duration.seconds($0) })
    // Up, and held there past the window: the next failure waits the shortest again.
    time += choice.upWait
    #expect(choice.update(target: 2_500_000, at: time) == 0)
    time += ViewerLayerChoice.failedProbeWindow
    #expect(choice.update(target: 2_500_000, at: time) == nil)
    #expect(choice.update(target: 400_000, at: time + .seconds(1)) == 1)
    #expect(choice.upWait == ViewerLayerChoice.shortestUpWait)
  }
}

@Suite(.tier(.pipeline), .sharedProcess) struct LayerSwitchTests {
  init() { TestEnvironment.prepare() }

  /// A media sink that keeps what it is given.
  final class Taken: MediaSink {
    let frames = Mutex<[(bytes: [UInt8], captured: ClockTime?)]>([])
    func send(_ buffer: Buffer, caps: Caps, capturedAt captured: ClockTime?) {
      let bytes = (try? buffer.withUnsafeBytes { Array($0) }) ?? []
      frames.withLock { $0.append((bytes, captured)) }
    }
    func signal(muted: Bool) {}
  }

  /// A frame of `layer` captured at `milliseconds`, a keyframe or not.
  func frame(_ layer: UInt8, _ milliseconds: UInt64, key: Bool) -> (Buffer, ClockTime) {
    var buffer = Buffer(copying: [layer])
    if !key { buffer.flags.insert(.deltaUnit) }
    return (buffer, ClockTime(nanoseconds: milliseconds * 1_000_000))
  }

  @Test func aNewLayerIsTakenAtItsFirstKeyframeAndCaptureTimesStayInOrder() throws {
    let taken = Taken()
    let layers = LayerSwitch(to: taken)
    let gates = [layers.gate(0), layers.gate(1)]
    let caps = try Caps("video/x-vp8")
    func send(_ layer: UInt8, _ milliseconds: UInt64, key: Bool = false) {
      let (buffer, captured) = frame(layer, milliseconds, key: key)
      gates[Int(layer)].send(buffer, caps: caps, capturedAt: captured)
    }
    send(0, 0, key: true)
    send(1, 0, key: true)  // not asked for: dropped
    layers.request(1)
    send(1, 33)  // not a keyframe: the full size goes on
    send(0, 33)
    send(1, 66, key: true)  // the smaller layer's keyframe: taken, before the full size's frame
    send(0, 66, key: true)  // dropped: the layer is not sent any more
    send(1, 100)
    layers.request(0)
    send(1, 133)
    send(0, 133, key: true)  // the full size's keyframe after the smaller's frame of its time
    send(0, 166)
    let frames = taken.frames.withLock { $0 }
    #expect(frames.map(\.bytes) == [[0], [0], [1], [1], [1], [0], [0]])
    #expect(frames.map { $0.captured!.nanoseconds / 1_000_000 } == [0, 33, 66, 100, 133, 134, 166])
    #expect(layers.layer == 0 && layers.switches == 2)
  }
}

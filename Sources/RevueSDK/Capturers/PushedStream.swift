import GStreamer
import Synchronization

/// The pad a conversion chain is fed through on the calling thread: it sends the stream's
/// events in the order GStreamer wants them (stream start, caps, segment) and new caps only
/// when the buffers' format changes.
final class PushedStream: Sendable {
  private let pad: Pad
  private let lastCaps = Mutex<Caps?>(nil)
  private let firstCaps = Atomic(true)

  /// A stream named `id` into `sink`, the first element's sink pad.
  /// - Throws: ``GStreamerError`` when the pad cannot be linked.
  init(id: String, into sink: Pad) throws {
    pad = Pad.makeSource(name: id)
    try pad.link(sink)
    pad.push(event: .streamStart(id: id))
  }

  /// Pushes `buffer`, described by `caps`, through the chain; returns once the chain has processed it.
  /// - Throws: the ``FlowError`` the chain returned.
  func push(_ buffer: Buffer, caps: Caps) throws(FlowError) {
    let changed = lastCaps.withLock { last in
      defer { last = caps }
      return last != caps
    }
    if changed {
      pad.push(event: .caps(caps))
      if firstCaps.exchange(false, ordering: .relaxed) { pad.push(event: .timeSegment) }
    }
    try pad.push(buffer)
  }
}

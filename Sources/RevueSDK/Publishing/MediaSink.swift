import GStreamer
import Synchronization

/// Where a local track's media goes to be sent: an RTP publication's sender, a WebRTC session's
/// source, an RTSP media's source. Every transport is one; none is a renderer (renderers show
/// what a track gives them; a sink is handed each buffer with the time it was captured, and told
/// whether receivers should see the track as muted).
///
/// A track holds its sinks strongly, from ``LocalVideoTrack/attach(_:)`` to its `detach(_:)`,
/// and calls them on its delivering thread (the capture thread): a sink must not block.
protocol MediaSink: AnyObject, Sendable {
  /// Takes a frame or audio buffer (its memory shared, not copied) described by `caps`, captured
  /// at `captured` on the system clock (nil: now). A video track sends its mute placeholder this
  /// way too, with the time the frame it stands for was captured.
  func send(_ buffer: Buffer, caps: Caps, capturedAt captured: ClockTime?)

  /// Learns whether receivers should see the track as muted (muted, or its camera off), at
  /// attach and at every change.
  func signal(muted: Bool)

  /// The raw formats its encoders take as they come (no conversion); nil when it takes any or
  /// does not say. A camera track's capture delivers one of them when it can (issue 29: a frame
  /// converted at most once, shared by every sink).
  var rawFormats: Set<PixelFormat>? { get }
}

extension MediaSink {
  /// Not said: any format.
  var rawFormats: Set<PixelFormat>? { nil }
}

/// The sinks of one local track, in the order they were attached.
final class MediaSinks: Sendable {
  private let sinks = Mutex<[any MediaSink]>([])

  /// The sinks now.
  var all: [any MediaSink] { sinks.withLock { $0 } }

  /// Whether there are none (the track is not published).
  var isEmpty: Bool { sinks.withLock { $0.isEmpty } }

  /// Adds `sink`, once.
  func attach(_ sink: any MediaSink) {
    sinks.withLock { sinks in
      if !sinks.contains(where: { $0 === sink }) { sinks.append(sink) }
    }
  }

  /// Removes `sink`.
  func detach(_ sink: any MediaSink) { sinks.withLock { $0.removeAll { $0 === sink } } }

  /// Hands a buffer to every sink (see ``MediaSink/send(_:caps:capturedAt:)``).
  func send(_ buffer: Buffer, caps: Caps, capturedAt captured: ClockTime?) {
    for sink in all { sink.send(buffer, caps: caps, capturedAt: captured) }
  }

  /// The raw formats every sink that says takes (``MediaSink/rawFormats``), nil when none says.
  var rawFormats: Set<PixelFormat>? {
    let said = all.compactMap(\.rawFormats)
    guard let first = said.first else { return nil }
    return said.dropFirst().reduce(first) { $0.intersection($1) }
  }

  /// Tells every sink whether the track is muted.
  func signal(muted: Bool) {
    for sink in all { sink.signal(muted: muted) }
  }
}

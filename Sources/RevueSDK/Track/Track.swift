import Foundation
import Synchronization

/// A track: a named stream of video or audio, local or remote.
public class Track: @unchecked Sendable {
  // Safety (@unchecked): the only mutable state, the mute flag, is in a Mutex.

  /// What a track carries.
  public enum Source: Sendable, Hashable {
    /// A camera.
    case camera
    /// A microphone.
    case microphone
    /// The video of a screen share.
    case screenShareVideo
    /// The audio of a screen share.
    case screenShareAudio
    /// Anything else (a buffer track's default).
    case unknown
  }

  /// The track's name, as receivers see it.
  public let name: String
  /// A unique identifier of the track.
  public let sid: String
  /// What the track carries.
  public let source: Source

  private let muted = Mutex(false)

  init(name: String, source: Source) {
    self.name = name
    self.source = source
    sid = "TR_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12)
  }

  /// Whether the track is muted.
  public var isMuted: Bool { muted.withLock { $0 } }

  /// Mutes the track: receivers and local renderers get the placeholder (or nothing) instead of frames.
  public func mute() async throws { setMuted(true) }

  /// Unmutes the track.
  public func unmute() async throws { setMuted(false) }

  /// Changes the mute flag; subclasses react to the change.
  func setMuted(_ flag: Bool) {
    let changed = muted.withLock { muted in
      defer { muted = flag }
      return muted != flag
    }
    if changed { didChangeMute(flag) }
  }

  /// Called after the mute flag changed.
  func didChangeMute(_ isMuted: Bool) {}
}

/// A video track: frames go to its renderers.
public class VideoTrack: Track, @unchecked Sendable {
  /// The renderers, held weakly.
  let renderers = MulticastDelegate<any VideoRenderer>()

  /// Tells the renderers that clear (views) to clear: the track shows nothing now.
  func clearRenderers() {
    for case let renderer as any ClearingRenderer in renderers.all { renderer.clearPicture() }
  }

  /// Lets the track go, as seed 001's owners do (a participant that leaves, a local participant
  /// destroyed): the views showing it clear and let go of it (their `track` reads nil), and no
  /// renderer gets its frames from then on.
  func release() {
    for case let view as any ClearingRenderer in renderers.all { view.trackReleased(self) }
    renderers.removeAll()
  }

  /// Adds a renderer, held weakly: keep your own reference.
  public func add(videoRenderer: any VideoRenderer) { renderers.add(delegate: videoRenderer) }

  /// Removes a renderer.
  public func remove(videoRenderer: any VideoRenderer) { renderers.remove(delegate: videoRenderer) }

  /// Calls every renderer with `frame`, on the calling thread.
  func render(_ frame: PixelBuffer) {
    for renderer in renderers.all { renderer.render(pixelBuffer: frame) }
  }
}

/// An audio track: buffers go to its renderers.
public class AudioTrack: Track, @unchecked Sendable {
  /// The renderers, held weakly.
  let renderers = MulticastDelegate<any AudioRenderer>()

  /// Adds a renderer, held weakly: keep your own reference.
  public func add(audioRenderer: any AudioRenderer) { renderers.add(delegate: audioRenderer) }

  /// Removes a renderer.
  public func remove(audioRenderer: any AudioRenderer) { renderers.remove(delegate: audioRenderer) }

  /// Calls every renderer with `buffer`, on the calling thread.
  func render(_ buffer: AudioPCMBuffer) {
    for renderer in renderers.all { renderer.render(pcmBuffer: buffer) }
  }
}

/// A renderer that can show nothing (a ``VideoView``): told so when its track is muted, or its
/// camera off, with no placeholder. Custom renderers are not: they keep what they drew last.
protocol ClearingRenderer: VideoRenderer {
  /// Shows nothing until the next frame.
  func clearPicture()
  /// `track` was let go of by its owner: shows nothing and lets go of it too, when it shows it.
  func trackReleased(_ track: VideoTrack)
}

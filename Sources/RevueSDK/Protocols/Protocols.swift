/// Changes each frame of a local video track before it is shown and sent.
public protocol VideoProcessor: AnyObject, Sendable {
  /// Called once per frame on the capture thread (for a buffer track, the thread that pushed
  /// the frame). Return the frame to use (the same one or a new one), or nil to drop it.
  /// A slow processor lowers the frame rate.
  func process(pixelBuffer: PixelBuffer) -> PixelBuffer?

  /// The 4:2:0 formats the processor takes (`.nv12`, `.i420`); nil (the default) for either. A
  /// camera track delivers one of them, changing format while capturing when the processor is
  /// set; frames a buffer track is given come as they were pushed.
  var pixelFormats: Set<PixelFormat>? { get }
}

extension VideoProcessor {
  /// Either 4:2:0 format: NV12 or I420, whichever the camera and the encoders make cheapest.
  public var pixelFormats: Set<PixelFormat>? { nil }
}

/// Receives the frames of a video track.
public protocol VideoRenderer: AnyObject, Sendable {
  /// Called once per frame on the thread that delivers it: the capture thread of a local
  /// track, the receiving thread of a remote one. Return quickly.
  func render(pixelBuffer: PixelBuffer)
}

/// Receives the audio of an audio track.
public protocol AudioRenderer: AnyObject, Sendable {
  /// Called for every buffer, in the track's format, on the thread that delivers it.
  func render(pcmBuffer: AudioPCMBuffer)
}

/// Whether a capturer is capturing.
public enum CaptureState: Sendable, Hashable {
  /// Not capturing; every capturer starts here.
  case idle
  /// Capturing.
  case capturing
  /// The capturer could not start (the screen share, when the user declines).
  case error
}

/// Told about a video capturer's changes, on the main actor, in order, each with the value at
/// the moment of the change. Every method is optional.
///
/// On Linux the main actor runs only while the program lets it: a command-line App gets these
/// calls from an `async` `main` (`@main` with `static func main() async`, as `revue` does) or
/// after `dispatchMain()`; a `main` that blocks its thread (a `while` loop, `sleep`,
/// `DispatchSemaphore.wait`) gets none. GTK and Qt Apps run their own loop on the main thread:
/// call `dispatchMain()` first, or drive the main queue from theirs. Code without a main
/// loop can read `VideoCapturer/events` instead.
@MainActor
public protocol VideoCapturerDelegate: AnyObject {
  /// The size of the frames sent changed; nil when capture stops.
  func capturer(_ capturer: VideoCapturer, didUpdate dimensions: Dimensions?)
  /// The capture state changed.
  func capturer(_ capturer: VideoCapturer, didUpdate state: CaptureState)
  /// The camera cannot produce the size asked for and uses `actual`.
  func capturer(_ capturer: VideoCapturer, didDowngradeResolution requested: Dimensions, to actual: Dimensions)
  /// Capture stopped by itself (the camera was unplugged or failed); `reason` says why.
  func capturer(_ capturer: VideoCapturer, didInterrupt reason: String)
  /// An element of the capture pipeline warned or failed, in GStreamer's words, with its path.
  func capturer(_ capturer: VideoCapturer, didReport fault: MediaFault)
}

extension VideoCapturerDelegate {
  /// Does nothing.
  public func capturer(_ capturer: VideoCapturer, didUpdate dimensions: Dimensions?) {}
  /// Does nothing.
  public func capturer(_ capturer: VideoCapturer, didUpdate state: CaptureState) {}
  /// Does nothing.
  public func capturer(_ capturer: VideoCapturer, didDowngradeResolution requested: Dimensions, to actual: Dimensions) {
  }
  /// Does nothing.
  public func capturer(_ capturer: VideoCapturer, didInterrupt reason: String) {}
  /// Does nothing.
  public func capturer(_ capturer: VideoCapturer, didReport fault: MediaFault) {}
}

/// Told of changes a remote participant makes to its tracks, on the main actor (held weakly;
/// see ``VideoCapturerDelegate`` on running the main actor on Linux). Code without a main loop
/// can read the tracks' `events` instead (``StreamEvent/muted(_:)``).
///
/// A LiveKit-style `participant(_:trackPublication:didUpdateIsMuted:)` does not compile here
/// (`Participant` and `TrackPublication` say what to write), rather than compiling into a
/// method nothing calls.
@MainActor
public protocol RemoteParticipantDelegate: AnyObject {
  /// The sender muted `track` or turned its camera off (`isMuted` true), or unmuted it: its
  /// views clear and stay empty while it is muted; show the App's own placeholder.
  func participant(_ participant: RemoteParticipant, track: Track, didUpdateIsMuted isMuted: Bool)
}

/// LiveKit's participant type, which a port names in its delegate: RevueSDK's delegates take a
/// ``RemoteParticipant`` (or ``LocalParticipant``).
@available(
  *, unavailable, renamed: "RemoteParticipant",
  message: "write participant(_: RemoteParticipant, track: Track, didUpdateIsMuted:) in a RemoteParticipantDelegate"
)
public typealias Participant = RemoteParticipant

/// LiveKit's publication type, which a port names in `participant(_:trackPublication:didUpdateIsMuted:)`:
/// RevueSDK's delegate is told of the ``Track``.
@available(
  *, unavailable, renamed: "Track",
  message: "write participant(_: RemoteParticipant, track: Track, didUpdateIsMuted:) in a RemoteParticipantDelegate"
)
public typealias TrackPublication = Track

extension RemoteParticipantDelegate {
  /// Does nothing.
  public func participant(_ participant: RemoteParticipant, track: Track, didUpdateIsMuted isMuted: Bool) {}
}

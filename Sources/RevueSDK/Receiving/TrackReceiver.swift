/// What receives a remote track's media, as the track and its participant see it: an RTP
/// port's ``RTPReceiver``, or one stream of a ``WHEPSession``. The track renders what it is
/// handed; this is the rest: the counters, the state and events, the sender's name, the stop.
protocol TrackReceiver: AnyObject, Sendable {
  /// The pipeline the media is decoded in (shared by a WHEP session's video and audio).
  var pipeline: MediaPipeline { get }
  /// Running, failed or stopped, with the pipeline's faults and the sender's mute changes.
  var status: StreamStatus { get }
  /// The counters now; reading them starts the next bitrate interval.
  var statistics: RemoteVideoTrack.Statistics { get }
  /// The sender's RTCP CNAME, once learned; nil when it never is.
  var cname: String? { get }
  /// What names the sender until its CNAME is learned: `rtp:PORT`, or the WHEP URL.
  var placeholderIdentity: String { get }
  /// The sender's CNAME, each time it is learned or changes.
  var identities: Broadcast<String> { get }
  /// Whether the sender's latest report says its track is muted.
  var isMutedBySender: Bool { get }
  /// Stops receiving; a WHEP session is deleted on its server before this returns.
  func stop() async
  /// Asks the sender for the smallest layer that covers `size`, the size the video is shown at
  /// (nil: the sender's choice), where it offers layers (a simulcast WHEP broadcast's).
  func adapt(to size: Dimensions?)
}

extension TrackReceiver {
  /// An RTP stream offers no layers: nothing to ask.
  func adapt(to size: Dimensions?) {}
}

extension RTPReceiver: TrackReceiver {
  /// `rtp:PORT`.
  var placeholderIdentity: String { "rtp:\(port)" }
}

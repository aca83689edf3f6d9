import Foundation
import GStreamer
import Synchronization

/// Someone sending to this room: identified by the CNAME of their RTCP reports.
public final class RemoteParticipant: Sendable {
  /// The sender's RTCP CNAME, or `rtp:PORT` until its first report; for a WHEP stream, its URL
  /// (``Room/watch(whep:token:timeout:)``).
  public var identity: String {
    let receivers: [any TrackReceiver] = [videoTrack?.receiver, audioTrack?.receiver].compactMap { $0 }
    return receivers.lazy.compactMap(\.cname).first ?? receivers.first?.placeholderIdentity ?? "rtp:0"
  }
  /// The sender's identity (its RTCP CNAME) each time it is learned from a report, from now on.
  public var identityUpdates: AsyncStream<String> {
    (videoTrack?.receiver ?? audioTrack?.receiver)?.identities.subscribe() ?? AsyncStream { $0.finish() }
  }
  /// The video track received, if the stream has one.
  public let videoTrack: RemoteVideoTrack?
  /// The first camera track the participant sends (seed 001's `firstCameraVideoTrack`): its
  /// video track, while it has one from a camera. Still the track while the sender has muted
  /// it: check ``Track/isMuted``.
  public var firstCameraVideoTrack: RemoteVideoTrack? { videoTrack?.source == .camera ? videoTrack : nil }
  /// The audio track received, if the stream has one.
  public let audioTrack: RemoteAudioTrack?
  private let syncMeter: SyncMeter?

  private let delegates = MulticastDelegate<any RemoteParticipantDelegate>()

  init(videoTrack: RemoteVideoTrack?, audioTrack: RemoteAudioTrack?, syncMeter: SyncMeter? = nil) {
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    self.syncMeter = syncMeter
    videoTrack?.participant.target = self
    audioTrack?.participant.target = self
  }

  /// Adds a delegate, held weakly: keep your own reference.
  public func add(delegate: any RemoteParticipantDelegate) { delegates.add(delegate: delegate) }

  /// Removes a delegate.
  public func remove(delegate: any RemoteParticipantDelegate) { delegates.remove(delegate: delegate) }

  /// Tells the delegates, on the main actor, that the sender muted or unmuted `track`.
  func track(_ track: Track, didUpdateIsMuted isMuted: Bool) {
    Task { @MainActor [weak self] in
      guard let self else { return }
      for delegate in self.delegates.all { delegate.participant(self, track: track, didUpdateIsMuted: isMuted) }
    }
  }

  /// The lip sync of the sender's video and audio, when they carry the sync test signal
  /// (`revue stream --test-pattern --audio`): the time from a white flash to the start of its
  /// beep, in milliseconds, as a receiver that plays the two in sync by the sender's RTCP
  /// reports shows them (the median of the latest pairs; positive: the sound comes late). Nil
  /// until a flash and its beep arrived, or when the stream was not opened with
  /// `measuresAVSync` (``Room/listen(sdp:on:latency:measuresAVSync:)``).
  public var avSyncMilliseconds: Double? { syncMeter?.skewMilliseconds }

  /// Stops receiving; a WHEP session is deleted on its server (waited for up to 5 s).
  func stop() async {
    await videoTrack?.receiver.stop()
    await audioTrack?.receiver.stop()
  }
}

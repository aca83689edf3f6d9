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
  /// Called once when every track of the participant has ended because its sender left.
  private let leaving = Mutex<(@Sendable (RemoteParticipant) -> Void)?>(nil)

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
  /// `measuresAVSync` (``Room/listen(sdp:on:latency:lossRecovery:measuresAVSync:from:)``).
  public var avSyncMilliseconds: Double? { syncMeter?.skewMilliseconds }

  /// Whether the sender left (seed 001: "when a participant leaves"): for each of its tracks,
  /// the sender said goodbye (an RTCP BYE, which Revue's plain RTP senders send when they stop)
  /// and no other sender took its place within a second, or it sent nothing (no media, no
  /// RTCP) for 10 s. Its tracks have ended then (``RemoteVideoTrack/state`` `.stopped`), the
  /// views showing them have cleared and let go of them, and the room no longer lists it.
  /// Tracks of a WHEP stream end as ``Room/watch(whep:token:timeout:)`` says.
  public var hasLeft: Bool {
    [videoTrack?.state, audioTrack?.state].compactMap { $0 }.allSatisfy { $0 != .running }
  }

  /// Sets what is called, once, when the participant leaves (the room forgets it).
  func whenLeft(_ action: @escaping @Sendable (RemoteParticipant) -> Void) { leaving.withLock { $0 = action } }

  /// A track ended because its sender left: once every track has, the participant has left.
  func trackEnded() {
    guard hasLeft,
      let action = leaving.withLock({ action in
        defer { action = nil }; return action
      })
    else { return }
    action(self)
  }

  /// Stops receiving; a WHEP session is deleted on its server (waited for up to 5 s).
  func stop() async {
    await videoTrack?.receiver.stop()
    await audioTrack?.receiver.stop()
  }
}

/// A session: the local participant and, once connected, the remote ones.
/// Connecting and publishing come with the transport (issue 5); the local participant's tracks
/// and switches work before that.
public final class Room: Sendable {
  /// The process's shared room.
  public static let shared = Room()

  /// This process's participant: its camera, microphone and buffer tracks.
  public let localParticipant: LocalParticipant?

  /// A room of its own, with a local participant.
  public init() {
    localParticipant = LocalParticipant()
  }
}

/// RevueLab: tools to try Revue on the links it will meet.
///
/// - ``LinkEmulator``: a user-space UDP relay between a sender and a receiver that loses,
///   delays, jitters, reorders, duplicates, caps and cuts the packets both ways, seeded so
///   runs repeat.
/// - Stamped frames: a frame number carried in the pixels, so that a receiver can tell which
///   frame it shows and whether it is intact.
/// - ``FrameCounter``: a renderer that counts frames and tells when the first and the last came.
public enum RevueLab {}

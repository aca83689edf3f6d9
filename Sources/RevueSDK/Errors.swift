/// An error of the SDK: what kind of failure, what to do, and the error underneath.
public struct RevueError: Error, Sendable, CustomStringConvertible {
  /// The kinds of failure.
  public enum Kind: Sendable, Hashable {
    /// GStreamer could not build or run a pipeline.
    case gstreamer
    /// A buffer or option given by the App is invalid.
    case invalidInput
    /// The operation needs a state the object is not in.
    case invalidState
    /// A server (a WHIP endpoint) refused, answered something malformed, could not be reached,
    /// or the media connection to it did not come up in time.
    case network
  }

  /// What kind of failure.
  public var kind: Kind
  /// What happened and what to do, in one line.
  public var message: String
  /// The error underneath, such as a `GStreamerError`.
  public var underlying: (any Error & Sendable)?

  /// An error of `kind`.
  public init(_ kind: Kind, _ message: String, underlying: (any Error & Sendable)? = nil) {
    self.kind = kind
    self.message = message
    self.underlying = underlying
  }

  /// The message, then the underlying error.
  public var description: String { underlying.map { "\(message): \($0)" } ?? message }
}

import RevueSDK
import Synchronization

/// A renderer that counts the frames it gets, and tells when the first one and the `until`-th
/// one came (`revue check`'s camera test, the bench's senders and receivers).
public final class FrameCounter: VideoRenderer {
  private let state = Mutex((count: 0, first: ContinuousClock.Instant?.none))
  private let target: Int
  private let firstFrame = AsyncStream<ContinuousClock.Instant>.makeStream()
  private let allFrames = AsyncStream<Void>.makeStream()

  /// A counter whose ``waitForAll()`` returns at frame `target`.
  public init(until target: Int) { self.target = target }

  /// The frames rendered so far.
  public var count: Int { state.withLock { $0.count } }

  /// Counts the frame.
  public func render(pixelBuffer: PixelBuffer) {
    let now = ContinuousClock.now
    let count = state.withLock { state in
      state.count += 1
      return state.count
    }
    if count == 1 { firstFrame.continuation.yield(now) }
    if count == target { allFrames.continuation.yield() }
  }

  /// When the first frame came (waits for it).
  public func waitForFirst() async -> ContinuousClock.Instant {
    for await instant in firstFrame.stream { return instant }
    return .now
  }

  /// Returns once frame `target` has come.
  public func waitForAll() async {
    for await _ in allFrames.stream { return }
  }
}

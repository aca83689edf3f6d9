import Foundation
import GStreamer
import Synchronization

extension NodeElements {
  /// The version of the GStreamer library in use, such as `1.22.0`.
  public static var gstreamerVersion: String { Gst.version.description }

  /// What the self-test pipeline did.
  public struct SelfTest: Sendable {
    /// The pipeline that ran, in gst-launch syntax.
    public var pipeline: String
    /// Frames that came out of the decoder into the appsink.
    public var framesReceived: Int
    /// The caps of the frames received.
    public var caps: String?
  }

  /// Encodes `frames` frames of a test pattern with VP8, packs them in RTP, unpacks and decodes
  /// them, and counts what arrives: proof that the elements the node needs work together here.
  /// - Throws: GStreamer's error when an element is missing or the pipeline fails.
  public static func runSelfTest(frames: Int = 30, timeout: Duration = .seconds(30)) async throws -> SelfTest {
    let description = try PipelineConfig.builtIn("selftest").description(variables: ["FRAMES": "\(frames)"])
    let pipeline = try Pipeline(parsing: description)
    let sink = try pipeline.element(named: "out", as: AppSink.self)
    let counter = FrameCounter()
    sink.setCallbacks(newSample: { counter.add($0.caps?.description) })
    try await pipeline.playUntilEndOfStream(timeout: timeout)
    let (count, caps) = counter.value
    return SelfTest(pipeline: description, framesReceived: count, caps: caps)
  }
}

/// Counts frames from the streaming thread.
private final class FrameCounter: Sendable {
  private let state = Mutex((count: 0, caps: String?.none))
  func add(_ caps: String?) { state.withLock { $0 = ($0.count + 1, $0.caps ?? caps) } }
  var value: (Int, String?) { state.withLock { ($0.count, $0.caps) } }
}

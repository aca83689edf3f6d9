import GStreamer
import Synchronization

/// A pipeline config running: started at once, it ends at end of stream or at the first error,
/// which names the element that posted it.
public final class PipelineRun: Sendable {
  private let pipeline: MediaPipeline
  private let outcome = Locked<(ended: Bool, failure: String?)>((false, nil))

  /// Checks the config (``PipelineConfig/checkedDescription(variables:)``) and starts it.
  /// - Throws: ``PipelineConfig/Error`` naming the line and column of a bad element, property or
  ///   variable; ``RevueError`` when GStreamer refuses the description or the pipeline cannot start.
  public init(_ config: PipelineConfig, variables: [String: String] = [:]) throws {
    let description = try config.checkedDescription(variables: variables)
    let outcome = self.outcome
    do {
      pipeline = try MediaPipeline(parsing: description) { fault in
        guard fault.severity == .error else {
          return RevueLog.log(.warning, "PipelineRun", "\(config.source): \(fault)")
        }
        outcome.value.withLock { state in
          if state.failure == nil { state.failure = "\(fault)" }
          state.ended = true
        }
      }
    } catch {
      throw RevueError(.invalidInput, "\(config.source): \(error)")
    }
    _ = pipeline.pipeline.bus.addSyncHandler { message in
      if case .eos = message.kind { outcome.value.withLock { $0.ended = true } }
    }
    do {
      try pipeline.play()
    } catch {
      throw RevueError(.gstreamer, "\(config.source) cannot start", underlying: error)
    }
  }

  /// Whether the pipeline reached end of stream or failed.
  public var hasEnded: Bool { outcome.value.withLock { $0.ended } }

  /// The first error, naming its element, if one came.
  public var failure: String? { outcome.value.withLock { $0.failure } }

  /// Ends the run: sends end of stream (so muxers finish their files) and waits up to `timeout`
  /// for it to come through, then stops the pipeline.
  public func finish(timeout: Duration = .seconds(3)) async {
    if !hasEnded {
      _ = pipeline.pipeline.sendEndOfStream()
      let deadline = ContinuousClock.now + timeout
      while !hasEnded && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
    }
    pipeline.stop()
  }
}

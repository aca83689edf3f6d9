import Dispatch
import GStreamer
import Synchronization

/// What went wrong in one of the SDK's pipelines, in GStreamer's own words.
public struct MediaFault: Sendable, Hashable, CustomStringConvertible {
  /// How bad it is.
  public enum Severity: Sendable, Hashable {
    /// The element goes on (a dropped buffer, a device that stutters).
    case warning
    /// The element cannot go on: what it served has ended.
    case error
  }

  /// How bad it is.
  public var severity: Severity
  /// The path of the element that said it, such as `/GstPipeline:vp8-sender/GstBin:bin0/GstVP8Enc:encoder`.
  public var element: String
  /// GStreamer's message.
  public var message: String
  /// GStreamer's debug details (source file, function), when the element gave some.
  public var debug: String?

  /// A fault of `severity` said by `element`.
  public init(severity: Severity, element: String, message: String, debug: String? = nil) {
    self.severity = severity
    self.element = element
    self.message = message
    self.debug = debug
  }

  init(_ severity: Severity, _ error: BusError) {
    self.init(severity: severity, element: error.source, message: error.error.message, debug: error.debug)
  }

  /// The fault an error or warning message says; nil for another message.
  init?(_ message: Message) {
    switch message.kind {
    case .error(let error): self.init(.error, error)
    case .warning(let warning): self.init(.warning, warning)
    default: return nil
    }
  }

  /// The element's name (the last part of its path), such as `encoder`.
  public var elementName: String {
    let last = element.split(separator: "/").last ?? Substring(element)
    return String(last.split(separator: ":").last ?? last)
  }

  /// `element: message`.
  public var description: String { "\(elementName): \(message)" }
}

/// One pipeline the SDK runs (capture, conversion, send, receive, playback) and its one owner.
///
/// It reads its bus from the moment it exists, so no message ever queues unread. Every pipeline
/// runs on GStreamer's system clock (`CLOCK_MONOTONIC`): a buffer's capture time in one pipeline
/// (its timestamp plus that pipeline's base time) means the same instant in every other one.
/// The first error stops the pipeline (never from one of its own streaming threads) and reaches
/// `onFault` once, as do warnings; the pipeline is set to NULL when it is stopped or released,
/// also when its owner's construction failed half-way.
final class MediaPipeline: Sendable {
  /// The pipeline: add elements, look them up; start and stop it through this owner.
  let pipeline: Pipeline
  private let failure = Locked<MediaFault?>(nil)

  /// A new, empty pipeline named `name`.
  /// - Parameter onFault: called on the posting thread for each warning and for the first
  ///   error, after which the pipeline stops. It must return quickly.
  convenience init(name: String, onFault: @escaping @Sendable (MediaFault) -> Void) {
    self.init(Pipeline(name: name), onFault: onFault)
  }

  /// A pipeline from a `gst-launch-1.0` description.
  /// - Throws: ``GStreamerError`` when GStreamer cannot parse it.
  convenience init(parsing description: String, onFault: @escaping @Sendable (MediaFault) -> Void)
    throws(GStreamerError)
  {
    self.init(try Pipeline(parsing: description), onFault: onFault)
  }

  private init(_ pipeline: Pipeline, onFault: @escaping @Sendable (MediaFault) -> Void) {
    self.pipeline = pipeline
    pipeline.use(clock: .system)
    Self.live.withLock { $0[ObjectIdentifier(pipeline)] = WeakPipeline(pipeline: pipeline) }
    let failure = self.failure
    // The handler holds the pipeline weakly: the bus lives as long as the pipeline.
    pipeline.bus.addSyncHandler { [weak pipeline] message in
      guard let fault = MediaFault(message) else { return }
      guard fault.severity == .error else { return onFault(fault) }
      let first = failure.value.withLock { failure in
        defer { failure = failure ?? fault }
        return failure == nil
      }
      guard first, let pipeline else { return }
      // Never inline: the poster may be one of its streaming threads, or an element in the
      // middle of a state change on the owner's thread.
      MediaPipeline.teardown.async { pipeline.stop() }
      onFault(fault)
    }
  }

  deinit {
    pipeline.stop()
    _ = Self.live.withLock { $0.removeValue(forKey: ObjectIdentifier(pipeline)) }
  }

  /// Every pipeline the SDK runs in this process now, held weakly: what
  /// ``FrameConversion/running()`` looks into.
  private static let live = Mutex<[ObjectIdentifier: WeakPipeline]>([:])

  /// The pipelines the SDK runs in this process now.
  static var all: [Pipeline] { live.withLock { $0.values.compactMap(\.pipeline) } }

  /// Where pipelines that failed are stopped.
  private static let teardown = DispatchQueue(label: "revue.pipeline.teardown")

  /// The first error, once one came: the pipeline has stopped.
  var fault: MediaFault? { failure.value.withLock { $0 } }

  /// Starts the pipeline (again, after a fault or a stop); stops it again when it cannot start.
  /// - Throws: ``GStreamerError`` with the error the failing element posted.
  func play() throws(GStreamerError) {
    failure.value.withLock { $0 = nil }
    do {
      try pipeline.play()
    } catch {
      pipeline.stop()
      throw error
    }
  }

  /// Stops the pipeline (state NULL), releasing its devices and sockets.
  func stop() { pipeline.stop() }
}

/// A pipeline held weakly, for ``MediaPipeline/all``.
private struct WeakPipeline: @unchecked Sendable {
  // Safety: only read and written under the registry's mutex; Pipeline is Sendable.
  weak var pipeline: Pipeline?
}

extension Buffer {
  /// Turns the buffer's time in a capture pipeline (its PTS, a running time there) into its
  /// capture time on the system clock, the time every SDK buffer carries between pipelines.
  mutating func stampCaptureTime(baseTime: ClockTime) {
    guard let pts else { return }
    self.pts = ClockTime(nanoseconds: pts.nanoseconds &+ baseTime.nanoseconds)
    dts = nil
  }
}

extension PixelBuffer {
  /// The frame of a capture pipeline's appsink sample, timed by its capture time (its running
  /// time plus `baseTime`); nil when its caps are not a picture the SDK takes.
  static func captured(_ sample: Sample, baseTime: ClockTime) -> PixelBuffer? {
    guard var buffer = sample.buffer, let structure = sample.caps?.structure(at: 0),
      let width = structure.get("width", as: Int.self), let height = structure.get("height", as: Int.self),
      let name = structure.get("format", as: String.self), let format = PixelFormat(gstreamerName: name)
    else { return nil }
    buffer.stampCaptureTime(baseTime: baseTime)
    return try? PixelBuffer(wrapping: buffer, width: width, height: height, format: format)
  }
}

import GStreamer
import Synchronization

/// Turns and converts frames with GStreamer's own elements, synchronously on the calling
/// thread: `[pad] ! [videoflip] ! videoconvert ! capsfilter ! appsink`, pushed like a test harness.
/// One chain serves one input format and rotation; a new input size is a new caps event.
final class VideoConversion: Sendable {
  let inputFormat: PixelFormat
  let outputFormat: PixelFormat
  let rotation: VideoRotation
  /// Who logs the frames GStreamer refuses.
  private let category: String
  private let pipeline: MediaPipeline
  private let source: PushedStream
  private let output = SampleSlot()

  /// A chain from `inputFormat` to `outputFormat`, turning by `rotation`; its elements' warnings
  /// and errors go to `onFault`, the frames it refuses to the log under `category`.
  /// - Throws: ``RevueError`` when an element is missing.
  init(
    from inputFormat: PixelFormat, to outputFormat: PixelFormat, rotation: VideoRotation, category: String,
    onFault: @escaping @Sendable (MediaFault) -> Void
  ) throws {
    self.inputFormat = inputFormat
    self.outputFormat = outputFormat
    self.rotation = rotation
    self.category = category
    pipeline = MediaPipeline(name: "conversion", onFault: onFault)
    // videoflip costs about 10% of a conversion even when it does not turn: leave it out then.
    var elements: [Element] = []
    if rotation != ._0 {
      let flip = try Element.make("videoflip")
      try flip.set("video-direction", Value.enumeration(rotation.videoDirection))
      elements.append(flip)
    }
    let convert = try Element.make("videoconvert")
    let filter = try Element.make("capsfilter")
    try filter.set("caps", try Caps("video/x-raw, format=\(outputFormat.gstreamerName)"))
    let sink = try Element.make("appsink", as: AppSink.self)
    sink.sync = false
    try sink.set("enable-last-sample", false)
    elements += [convert, filter, sink]
    try pipeline.pipeline.add(elements)
    for (upstream, downstream) in zip(elements, elements.dropFirst()) { try upstream.link(downstream) }
    let output = self.output
    sink.setCallbacks(newSample: { sample in output.value.withLock { $0 = sample } })
    try pipeline.play()
    source = try PushedStream(
      id: "revue-capture-\(inputFormat)-\(rotation.rawValue)", into: elements[0].staticPad("sink")!)
  }

  /// Whether an element failed: the chain has stopped, and a new one takes the next frame.
  var hasFailed: Bool { pipeline.fault != nil }

  /// The converted frame, or nil (with the reason logged) when GStreamer refused it.
  func convert(_ frame: PixelBuffer) -> PixelBuffer? {
    do {
      try source.push(frame.buffer, caps: frame.caps)
    } catch {
      RevueLog.log(
        .warning, category,
        "frame dropped: GStreamer refused a \(frame.width)x\(frame.height) \(frame.format) frame (\(error))")
      return nil
    }
    guard let sample = output.take(),
      let buffer = sample.buffer, let structure = sample.caps?.structure(at: 0),
      let width = structure.get("width", as: Int.self), let height = structure.get("height", as: Int.self)
    else { return nil }
    return try? PixelBuffer(
      wrapping: buffer, width: width, height: height, format: outputFormat, colorRange: frame.colorRange)
  }
}

/// Turns frames and converts them to NV12 or I420 on the calling thread, with one
/// ``VideoConversion`` per input format and rotation, kept until ``reset()``: the frames an App
/// pushes to a ``BufferCapturer``, and those a LiveKit-style processor returns turned. One caller
/// at a time (a second one's frame could come out of the first one's call).
@_spi(Faces) public final class FrameConverter: Sendable {
  private struct Key: Hashable {
    var format: PixelFormat
    var rotation: VideoRotation
  }
  private let conversions = Mutex<[Key: VideoConversion]>([:])
  private let category: String
  private let onFault: @Sendable (MediaFault) -> Void

  /// A converter whose log entries name `category`, and whose pipelines' warnings and errors go
  /// to `onFault`, or to the log when it is nil (a pipeline that failed is made again for the
  /// next frame).
  public init(category: String, onFault: (@Sendable (MediaFault) -> Void)? = nil) {
    self.category = category
    self.onFault =
      onFault ?? { fault in RevueLog.log(fault.severity == .error ? .error : .warning, category, "\(fault)") }
  }

  /// `frame` turned clockwise by `rotation` (90° and 270° swap width and height), in I420 when
  /// it is I420 and NV12 otherwise; `frame` itself when upright in NV12 or I420. Nil when it
  /// cannot be converted (the reason is logged).
  public func convert(_ frame: PixelBuffer, rotation: VideoRotation) -> PixelBuffer? {
    if rotation == ._0, frame.format == .nv12 || frame.format == .i420 { return frame }
    let key = Key(format: frame.format, rotation: rotation)
    let conversion: VideoConversion? = conversions.withLock { all in
      if let existing = all[key], !existing.hasFailed { return existing }
      do {
        let made = try VideoConversion(
          from: frame.format, to: frame.format == .i420 ? .i420 : .nv12, rotation: rotation, category: category,
          onFault: onFault)
        all[key] = made
        return made
      } catch {
        RevueLog.log(.error, category, "frame dropped: cannot build the conversion pipeline: \(error)")
        return nil
      }
    }
    return conversion?.convert(frame)
  }

  /// Frees the pipelines.
  public func reset() { conversions.withLock { $0.removeAll() } }
}

/// The sample an appsink delivered during a synchronous push.
final class SampleSlot: Sendable {
  let value = Mutex<Sample?>(nil)

  /// The sample delivered since the last call, if any.
  func take() -> Sample? {
    value.withLock { sample in
      defer { sample = nil }
      return sample
    }
  }
}

import GStreamer
import Synchronization

/// Turns and converts frames with GStreamer's own elements, synchronously on the calling
/// thread: `[pad] ! [videoflip] ! videoconvert ! capsfilter ! appsink`, pushed like a test harness.
/// One chain serves one input format and rotation; a new input size is a new caps event.
final class VideoConversion: Sendable {
  let inputFormat: PixelFormat
  let outputFormat: PixelFormat
  let rotation: VideoRotation
  private let pipeline: MediaPipeline
  private let source: PushedStream
  private let output = SampleSlot()

  /// A chain from `inputFormat` to `outputFormat`, turning by `rotation`; its elements' warnings
  /// and errors go to `onFault`.
  /// - Throws: ``RevueError`` when an element is missing.
  init(
    from inputFormat: PixelFormat, to outputFormat: PixelFormat, rotation: VideoRotation,
    onFault: @escaping @Sendable (MediaFault) -> Void
  ) throws {
    self.inputFormat = inputFormat
    self.outputFormat = outputFormat
    self.rotation = rotation
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
        .warning, "BufferCapturer",
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

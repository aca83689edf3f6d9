import GStreamer

/// A pixel format conversion running in one of the SDK's pipelines: a `videoconvert` whose
/// output differs from its input (format, size or colorimetry). One in passthrough, handing its
/// input on as it came, is not one: GStreamer skips it.
///
/// A frame is converted at most once between a camera and an encoder: the camera's capture
/// pipeline delivers the format the encoders take (I420 from a JPEG decoder, the camera's own
/// NV12 or I420), and the send pipeline's conversion stays in passthrough unless the encoder
/// needs another format.
public struct FrameConversion: Sendable, Hashable, CustomStringConvertible {
  /// The pipeline's name, such as `camera` or `vp8-sender`.
  public var pipeline: String
  /// The element's path in its pipeline, such as `camera/bin0/videoconvert0`.
  public var element: String
  /// What it takes, as `NV12 1280x720 bt601`.
  public var input: String
  /// What it gives, as `I420 1280x720 bt601`.
  public var output: String

  /// `element: input → output`.
  public var description: String { "\(element): \(input) → \(output)" }

  /// The conversions running now in every pipeline the SDK made in this process (capture, send,
  /// conversion and view pipelines; not the media gst-rtsp-server makes for its clients), for
  /// tests and the bench. A pipeline not yet negotiated has none.
  public static func running() -> [FrameConversion] {
    MediaPipeline.all.flatMap { pipeline in
      pipeline.allElements.compactMap { element in conversion(by: element, in: pipeline) }
    }
  }

  /// The conversion `element` does now, if it is a `videoconvert` whose caps in and out differ.
  private static func conversion(by element: Element, in pipeline: Pipeline) -> FrameConversion? {
    guard let factory = element.factoryName, factory == "videoconvert" || factory == "videoconvertscale",
      let input = element.staticPad("sink")?.currentCaps, let output = element.staticPad("src")?.currentCaps,
      input != output
    else { return nil }
    return FrameConversion(
      pipeline: pipeline.name, element: path(of: element, in: pipeline), input: summary(input),
      output: summary(output))
  }

  /// `pipeline/bin/element`.
  private static func path(of element: Element, in pipeline: Pipeline) -> String {
    var names = [element.name]
    var parent = element.parent
    // The pipeline is the one ancestor with no parent (wrappers are made afresh: no identity).
    while let bin = parent, let above = bin.parent {
      names.insert(bin.name, at: 0)
      parent = above
    }
    return ([pipeline.name] + names).joined(separator: "/")
  }

  /// `FORMAT WIDTHxHEIGHT COLORIMETRY` of raw video caps.
  private static func summary(_ caps: Caps) -> String {
    guard caps.count > 0 else { return "\(caps)" }
    let structure = caps.structure(at: 0)
    let format = structure.get("format", as: String.self) ?? "?"
    let width = structure.get("width", as: Int.self).map(String.init) ?? "?"
    let height = structure.get("height", as: Int.self).map(String.init) ?? "?"
    let colorimetry = structure.get("colorimetry", as: String.self).map { " \($0)" } ?? ""
    return "\(format) \(width)x\(height)\(colorimetry)"
  }
}

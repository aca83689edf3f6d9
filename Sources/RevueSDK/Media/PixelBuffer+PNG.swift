import Foundation
import GStreamer

extension PixelBuffer {
  /// Writes the picture as a PNG file (`videoconvert ! pngenc ! filesink`).
  /// - Throws: ``RevueError`` when the file cannot be written.
  public func writePNG(to url: URL) async throws {
    do {
      let pipeline = try Pipeline(
        parsing: "appsrc name=source format=time ! videoconvert ! pngenc ! filesink name=file")
      try pipeline.element(named: "file")?.set("location", url.path)
      let source = try pipeline.element(named: "source", as: AppSrc.self)
      try pipeline.play()
      try source.push(sample: Sample(buffer: buffer, caps: caps))
      try source.endOfStream()
      try await pipeline.playUntilEndOfStream(timeout: .seconds(10))
    } catch {
      throw RevueError(.gstreamer, "cannot write a PNG to \(url.path)", underlying: error)
    }
  }
}

import Foundation
import GStreamer

extension PixelBuffer {
  /// The picture as a PNG (`videoconvert ! pngenc`).
  /// - Throws: ``RevueError`` when it cannot be encoded.
  public func pngData() async throws -> Data {
    do {
      let pipeline = try Pipeline(
        parsing: "appsrc name=source format=time ! videoconvert ! pngenc ! appsink name=sink sync=false")
      let source = try pipeline.element(named: "source", as: AppSrc.self)
      let sink = try pipeline.element(named: "sink", as: AppSink.self)
      try pipeline.play()
      defer { pipeline.stop() }
      try source.push(sample: Sample(buffer: buffer, caps: caps))
      try source.endOfStream()
      guard let png = sink.pullSample(timeout: .seconds(10))?.buffer else {
        throw RevueError(.gstreamer, "pngenc gave no picture within 10 s")
      }
      return Data(png.bytes)
    } catch let error as RevueError {
      throw error
    } catch {
      throw RevueError(.gstreamer, "cannot encode a PNG", underlying: error)
    }
  }

  /// Writes the picture as a PNG file.
  /// - Throws: ``RevueError`` when it cannot be encoded or the file cannot be written.
  public func writePNG(to url: URL) async throws {
    let data = try await pngData()
    do {
      try data.write(to: url)
    } catch {
      throw RevueError(.invalidInput, "cannot write a PNG to \(url.path)", underlying: error)
    }
  }
}

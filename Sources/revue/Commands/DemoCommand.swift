import Foundation
import RevueSDK

/// `revue demo`: a sender and a receiver in one process on loopback, then a summary.
struct DemoCommand {
  var duration: Int

  func run() async throws {
    let port = 2 * Int.random(in: 15_000..<30_000)
    let (device, isVirtual) = try await VirtualDevices.cameraOrVirtual()
    if isVirtual {
      FileHandle.standardError.write(Data("revue: no camera found: using the virtual camera \(device.name)\n".utf8))
    }
    let receiving = Room()
    let remote = try await receiving.listen(on: URL(string: "rtp://127.0.0.1:\(port)")!)
    let received = remote.videoTrack!
    let sending = Room()
    try await sending.connect(to: URL(string: "rtp://127.0.0.1:\(port)")!)
    let participant = sending.localParticipant!
    let capturer = participant.cameraTrack.capturer as! CameraCapturer
    _ = try await capturer.set(options: CameraCaptureOptions(device: device, dimensions: .h720_169, fps: 30))
    try await capturer.startCapture()
    let publication = try await participant.publish(videoTrack: participant.cameraTrack)
    FileHandle.standardError.write(
      Data("revue: demo: \(device.name) → VP8 → RTP 127.0.0.1:\(port) → decoder, for \(duration) s\n".utf8))
    let start = ContinuousClock.now
    await RunLoopControl.run(duration: duration) {}
    let seconds = StreamCommand.milliseconds(ContinuousClock.now - start) / 1000
    let sent = publication.statistics
    let receivedStatistics = received.statistics
    let format = capturer.format
    let snapshot = FileManager.default.temporaryDirectory.appendingPathComponent("revue-demo.png")
    if let frame = received.lastFrame { try await frame.writePNG(to: snapshot) }
    try await capturer.stopCapture()
    await sending.disconnect()
    await receiving.disconnect()
    let rows: [(String, String)] = [
      ("camera", "\(device.name)\(isVirtual ? " (virtual)" : "") \(format.map(\.description) ?? "")"),
      ("frames sent", "\(sent.framesEncoded) (\(sent.keyframes) keyframes)"),
      ("frames received", "\(receivedStatistics.framesDecoded)"),
      ("bitrate", String(format: "%.0f kbps", Double(sent.bytesSent) * 8 / seconds / 1000)),
      ("packets lost", "\(receivedStatistics.packetsLost)"),
      (
        "latency",
        receivedStatistics.latency.map {
          String(format: "%.1f ms, capture to decoded (mean)", StreamCommand.milliseconds($0))
        } ?? "no sender report yet"
      ),
      (
        "round-trip time",
        sent.roundTripTime.map { String(format: "%.2f ms", StreamCommand.milliseconds($0)) } ?? "no report yet"
      ),
      ("snapshot", received.lastFrame == nil ? "none (no frame)" : snapshot.path),
    ]
    for (name, value) in rows { print(name.padding(toLength: 17, withPad: " ", startingAt: 0) + value) }
    guard receivedStatistics.framesDecoded > 0 else {
      throw RevueError(.invalidState, "no frame arrived at the receiver")
    }
  }
}

import Foundation
import RevueProcess
import Testing

/// ffmpeg sending a test picture (`testsrc`, 320x240 at 30 fps) and a 1 kHz sine at an eighth of
/// full scale over RTP to 127.0.0.1, as its RTP muxer does: each stream to a port of its own,
/// Opus on payload type 97, and an SDP of its own (`-sdp_file`). A sender that is not Revue, for
/// the receivers' tests.
public struct FFmpegRTPSender: Sendable {
  /// The running ffmpeg: stop it at the end of the test (it ends by itself after the time
  /// given, and is killed if the test lets go of it first).
  public let process: ChildProcess
  /// The SDP ffmpeg wrote.
  public let sdp: String

  /// Starts ffmpeg sending `codec` (`vp8` or `h264`, a keyframe a second) to `videoPort`, on
  /// `videoPayloadType` (ffmpeg's own, 96, when nil), and Opus to `audioPort`, for `seconds`;
  /// returns once it has written its SDP, within 20 s.
  public static func start(
    codec: String, videoPort: Int, videoPayloadType: Int? = nil, audioPort: Int, seconds: Int = 30
  ) async throws -> FFmpegRTPSender {
    let encoder =
      codec == "h264"
      ? ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p"]
      : ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k"]
    let payloadType = videoPayloadType.map { ["-payload_type", "\($0)"] } ?? []
    let process = try ChildProcess(
      URL(fileURLWithPath: "/usr/bin/ffmpeg"),
      [
        "-hide_banner", "-loglevel", "error", "-nostdin", "-re", "-t", "\(seconds)", "-f", "lavfi", "-i",
        "testsrc=size=320x240:rate=30", "-re", "-t", "\(seconds)", "-f", "lavfi", "-i",
        "sine=frequency=1000:sample_rate=48000", "-map", "0:v",
      ]
        + encoder + ["-g", "30"] + payloadType + [
          "-f", "rtp", "rtp://127.0.0.1:\(videoPort)", "-map", "1:a",
          "-c:a", "libopus", "-b:a", "64k", "-f", "rtp", "rtp://127.0.0.1:\(audioPort)", "-sdp_file", "/dev/stdout",
        ])
    // The SDP is written at once, when both streams' headers are: its last line is the audio's.
    let sdp = try await process.waitForOutput(within: 20, for: "its SDP") { text in
      guard let audio = text.range(of: "m=audio") else { return false }
      return text[audio.upperBound...].contains("a=rtpmap:") && text.last?.isNewline == true
    }
    return FFmpegRTPSender(process: process, sdp: sdp)
  }
}

/// The report's prose: what the numbers include, the closing note, why a target is missed.
extension BenchCommand {
  /// What each number of the report includes, and why the latency measurement is sound.
  static let notes = """
    ## What the numbers include

    - **CPU** is user + system time of the measuring side's own process, all its threads: from
      `/proc/PID/stat` (10 ms ticks) or `wait4` (`ru_utime + ru_stime`), never `RUSAGE_CHILDREN`
      totals. *Send*: from the 15th RTP frame on the wire (the encoder is warm) to the (N−5)th, per
      second of that window; start-up and tear-down are left out on both sides. *Receive*: the
      receiving process only, from the moment the (identical, unmeasured) gst-launch sender starts
      to 300 ms after it ends, per second of video sent. *Capture*: Revue times its own capture loop
      (`getrusage(RUSAGE_SELF)`, at least 0.3 s of it); gst-launch is run for N and for 2N frames
      and the difference taken (N grown tenfold until the difference lasts 0.3 s), so neither side
      pays for its start-up.
    - **Peak resident memory** is the highest `VmHWM` of `/proc/PID/status`, read every 20 ms while
      the process runs. Not `ru_maxrss`: `posix_spawn` runs the child in the bench's own memory
      until its exec, and Linux carries that high-water mark (about 25 MiB) into the child's
      `ru_maxrss`. For Revue it includes the Swift runtime, Foundation and the SDK; "memory above an
      idle process" subtracts each side's idle process (the line above the table).
    - **Frames per second kept** counts RTP packets with the marker bit (the last packet of a VP8 or
      H.264 frame) at a UDP socket of the bench (127.0.0.1, a random high port), which neither side
      pays for. *Frames decoded* are frames at a Revue renderer, or buffers at gst-launch's
      `fakesink`.
    - **Sources**: *send* uses the virtual camera (`videotestsrc` in the camera's format: NV12 from
      the "csi-camera-module" profile, MJPEG from "usb-720p-webcam", decoded by `jpegdec`) through
      the camera capturer and `LocalParticipant.publish`; gst-launch runs `videotestsrc` with the same
      caps and the same conversion, encoder (`vp8enc deadline=1 cpu-used=8 end-usage=cbr …` with
      the SDK's thread count for the size and machine, `x264enc tune=zerolatency
      speed-preset=ultrafast …`), payloader, `rtpbin` and
      `udpsink` as the SDK's send pipeline. *Send from pushed frames* ("publish-nv12",
      "publish-bgra") pushes one 1920×1080 SMPTE-bars frame (made by `videotestsrc`, as
      gst-launch's) through a published `BufferCapturer` 30 times a second; gst-launch repeats the
      same frame with `imagefreeze is-live=true` (then `videoconvert` to NV12 for BGRA, as the
      capturer converts), into the same send pipeline; CPU per frame is the CPU per second of video
      over the frames per second kept. *Receive* runs `RTPReceiver`'s pipeline
      (`udpsrc ! rtpsession ! rtpjitterbuffer latency=50 ! depay ! decoder ! videoconvert ! I420`).
    - **Start-up**: Revue from just before `publish` (then at once `setCamera(enabled: true)`, whose
      switch waits 100 ms for a later call before the camera starts) to the first datagram at the
      bench's socket, and to the first frame at a Revue receiver the socket relays every datagram to.
      gst-launch has no `publish`: its reference is from the process's spawn to its first datagram,
      which Revue's row "spawn → first RTP packet" gives too (Revue's process also starts the Swift
      runtime and lists the devices before it publishes).
    - **Scale**: Revue is one process with N buffer tracks, each published (N send pipelines) and
      pushed the same 640×480 SMPTE-bars frame 30 times a second; gst-launch is one process with N
      pipelines `videotestsrc num-buffers=1 pattern=smpte ! imagefreeze is-live=true ! …`, the same
      frame repeated. N doubles from 4 until a count fails, then is bisected; a count passes when
      every sender keeps ≥ 28.5 fps (95 % of 30) on the wire for 3 s.
    - The machine may be shared with other builds while the bench runs; numbers are noisy then,
      and the medians and A/B alternation only soften it.

    ## Glass-to-glass latency: how, and why it is sound

    Each frame carries its number in its pixels: 16 bits as 64×64 blocks of black (luma 16) or
    white (235) along the top of an otherwise grey 1280×720 I420 picture, read back from the middle
    4×4 pixels of each block. Blocks this large and far apart survive VP8 and H.264 at 1.5 Mbit/s
    unchanged, and need no RTP header extension, so the same frames and the same reading work for
    any decoder: Revue's and gst-launch's. The frame counter is read, not inferred from order, so a
    lost or late frame cannot shift the pairing of send and arrival times; the first 30 frames
    (start-up, first keyframe) are left out.

    - *Revue*: one process publishes a buffer track (`BufferCapturer.capture`) and receives it with
      `Room.listen` on the same port; the time is taken just before `capture` and at the renderer
      of the `RemoteVideoTrack`.
    - *gst-launch*: the bench writes the same raw frames, at the same 30 fps, into a pipe read by
      `gst-launch-1.0 fdsrc ! rawvideoparse ! (the same queue, conversion, encoder, payloader,
      rtpbin) ! udpsink`; a second gst-launch receives with the same jitter buffer, depayloader and
      decoder, and `videoconvert ! I420 ! fdsink` writes the frames to a pipe the bench reads. The
      time is taken just before the write and when a whole frame has been read.

    Both stamps of a pair come from one clock (`CLOCK_MONOTONIC`) in one process, and the path
    between them is the same elements on both sides; neither receiver syncs to the clock
    (`appsink sync=false`, `fdsink sync=false`). gst-launch's side also pays for two pipe copies of
    the raw frame (about 1.4 MB each way), which Revue's does not: if anything it favours Revue by
    well under a millisecond.
    """

  /// The closing note: what the run shows beyond the table, and what would fix the misses.
  static let closing = """
    ## Closing note

    - **Scale** sends a static SMPTE-bars frame: real video, harder to encode, allows fewer senders.
      `vp8enc` encodes with one thread up to 640×480 and on machines of fewer than three cores
      (libwebrtc's rule): with two, two encoders' threads spin-waited against each other here and
      this machine kept one 640×480 sender instead of some thirty.
    - **Memory.** Every Revue process starts about 15 MiB above gst-launch (Swift runtime,
      Foundation, the SDK), and the camera path holds frames in two pipelines. The ratio target of
      1.05 cannot be met by a Swift process against a C program on the total; on the memory the
      work itself takes, the receive rows come within it and the send rows would need the one-pipeline
      camera path.
    - **Copies.** Pushed NV12 frames reach renderers and the H.264 encoder without a copy
      (`LocalTrackPublication.Statistics.bytesCopiedToEncoder`, which compares the memory at the
      encoder's input with the memory sent; the "publish" rows). BGRA frames are converted once,
      to NV12, and that conversion's output reaches the encoder without a further copy. `vp8enc` takes only I420, so for VP8 an NV12 frame is
      converted on the way (one full write of the picture: 3.1 MB a 1080p frame); I420 frames pass
      without a copy to both encoders.
    - **Start-up.** `publish` + `setCamera(enabled: true)` to the first packet includes the camera
      switch's 100 ms debounce by design; the rest is the camera pipeline's start.
    """

  /// Why a row misses its target, and what would fix it (found by the measurements in the
  /// closing note of docs/benchmarks.md).
  static func why(_ row: ReportRow) -> String {
    switch row.measure {
    case "peak resident memory":
      return "A Revue process starts about 15 MiB above gst-launch before any work (the idle rows above: "
        + "Swift runtime, Foundation, libdispatch, the SDK); the rest is the next row's."
    case "memory above an idle process" where row.scenario.hasPrefix("capture"):
      return "The bench's Revue side holds its source frame twice (the bytes it builds the `PixelBuffer` "
        + "from, and the `PixelBuffer`'s copy), and a conversion runs a pipeline of its own."
    case "memory above an idle process" where row.scenario.hasPrefix("receive"):
      return "Revue keeps the last decoded frame (`RemoteVideoTrack.lastFrame`, for snapshots) and "
        + "hands frames through an `appsink` to Swift: a frame or two more than `fakesink` holds. "
        + "Fix (SDK): keep the last frame only when a snapshot is asked for."
    case "memory above an idle process":
      return "Revue runs two pipelines where gst-launch runs one (camera → `appsink`, then `appsrc` → "
        + "encoder), each with its own buffer pool and queue. Fix (SDK): link the camera to the encoder in one pipeline when no processor needs "
        + "the frames in Swift, or bound the pools and the `appsrc` queue."
    case "CPU per second of video":
      return "Revue's camera path is two pipelines with a hand-off through Swift (`appsink` → "
        + "`PixelBuffer` → renderers → `appsrc`), a fixed cost of a fraction of a millisecond a frame "
        + "that weighs more against a cheap encode. Fix (SDK): one pipeline from camera to encoder "
        + "when no processor is set."
    case "CPU per frame" where !row.scenario.contains("1080p NV12 →"):
      return "Both sides run the same `videoconvert` or `videoflip`; Revue adds one push into and one "
        + "pull out of its conversion pipeline a frame. The ratio moved between 0.95 and 1.14 from one "
        + "full run to the next on this shared machine: within its noise; rerun on a quiet one."
    case "CPU per frame":
      return "Revue's frame path (in-flight flag, time stamp, renderer dispatch) costs about a "
        + "microsecond a frame against `imagefreeze ! fakesink`'s fraction of one: no pixel work on "
        + "either side; nothing a user would see."
    default:
      return "Not explained yet: the machine was shared during the run; rerun on a quiet machine."
    }
  }
}

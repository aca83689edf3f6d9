internal import CGStreamerVideo

extension Element {
  /// Makes a video sink that implements GStreamer's video overlay interface (`ximagesink`,
  /// `xvimagesink`, `glimagesink`) draw into the application's window of `handle` (an X11
  /// window id) instead of a window of its own. Set it before the sink starts; an element
  /// without the interface ignores it.
  ///
  /// The corresponding C function is `gst_video_overlay_set_window_handle`.
  public func setWindowHandle(_ handle: UInt) {
    guard
      g_type_check_instance_is_a(rawPointer.assumingMemoryBound(to: GTypeInstance.self), gst_video_overlay_get_type())
        != 0
    else { return }
    gst_video_overlay_set_window_handle(OpaquePointer(rawPointer), guintptr(handle))
  }
}

internal import CGStreamerAudio

/// Channel layouts of raw audio.
public enum AudioChannels {
  /// GStreamer's default channel positions for `channels` channels, as a caps `channel-mask`
  /// (0, unpositioned, where GStreamer has no default: more than 8 channels).
  ///
  /// The corresponding C function is `gst_audio_channel_get_fallback_mask`.
  public static func fallbackMask(channels: Int) -> UInt64 {
    guard channels > 0, channels <= 64 else { return 0 }
    return UInt64(gst_audio_channel_get_fallback_mask(gint(channels)))
  }
}

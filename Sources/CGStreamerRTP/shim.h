// The C API of GStreamer's rtp library, for the GStreamer Swift module.
#include <gst/rtp/rtp.h>

/// A new RTP header extension for `uri` with the id `id`, or NULL when no element implements
/// that URI; the caller owns it (it is floating).
static inline GstRTPHeaderExtension *crtp_header_extension_new(const gchar *uri, guint id) {
  GstRTPHeaderExtension *extension = gst_rtp_header_extension_create_from_uri(uri);
  if (extension != NULL) gst_rtp_header_extension_set_id(extension, id);
  return extension;
}

/// A payloader's `add-extension` action signal (g_signal_emit_by_name is variadic).
static inline void crtp_payloader_add_extension(GstElement *payloader, GstRTPHeaderExtension *extension) {
  g_signal_emit_by_name(payloader, "add-extension", extension);
}

// The C API of GStreamer's rtp library, for the GStreamer Swift module.
#include <gst/rtp/rtp.h>

/// A payloader's `add-extension` action signal (g_signal_emit_by_name is variadic).
static inline void crtp_payloader_add_extension(GstElement *payloader, GstRTPHeaderExtension *extension) {
  g_signal_emit_by_name(payloader, "add-extension", extension);
}

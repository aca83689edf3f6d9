// The C API of GStreamer's rtp library, for the GStreamer Swift module.
#include <gst/rtp/rtp.h>

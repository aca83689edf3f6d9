// The C API of GStreamer's sdp library, for the GStreamer Swift module.
#include <gst/sdp/sdp.h>

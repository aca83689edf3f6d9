// The C API of GStreamer's net library, for the GStreamer Swift module.
#include <gst/net/net.h>

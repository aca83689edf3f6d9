// The C API of GStreamer's app library, for the GStreamer Swift module.
#include <gst/app/app.h>

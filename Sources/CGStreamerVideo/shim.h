// The C API of GStreamer's video library, for the GStreamer Swift module.
#include <gst/video/video.h>

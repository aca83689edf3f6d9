// The C API of GStreamer's base classes library, for the GStreamer Swift module.
#include <gst/base/base.h>

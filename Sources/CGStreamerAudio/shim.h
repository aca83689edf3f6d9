// The C API of GStreamer's audio library, for the GStreamer Swift module.
#include <gst/audio/audio.h>

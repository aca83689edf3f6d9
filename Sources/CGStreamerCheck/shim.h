// The C API of GStreamer's check library (GstHarness, GstTestClock), for the GStreamerCheck
// Swift module.
#include <gst/gst.h>
#include <gst/check/gstharness.h>
#include <gst/check/gsttestclock.h>

#ifndef REVUE_ENCODER_STAND_INS_H
#define REVUE_ENCODER_STAND_INS_H

/// Stand-ins for hardware encoders, for tests on machines that have none: each is a bin around
/// `x264enc` (NV12 in, H.264 out; `vp8enc` for `vavp8enc`) registered under a hardware
/// encoder's factory name (`vah264enc`, `vaapih264enc`, `v4l2h264enc`, `nvh264enc`,
/// `vavp8enc`), with that element's property names and units (translated to the software
/// encoder's), and a read-only `keyframe-requests` counting the
/// `GstForceKeyUnit` events that reached it. A failing one refuses to leave READY, as a
/// hardware encoder whose device cannot be opened does.

/// Registers a stand-in under `name` (one of the five above); `fails` non-zero: it posts an
/// error and fails the change to PAUSED. Returns 0 when `name` is not one it stands in for.
int revue_standin_register(const char *name, int fails);

/// Removes the factory `name` from GStreamer's registry, so that `gst_element_factory_find`
/// no longer finds it (elements made from it go on).
void revue_standin_unregister(const char *name);

#endif

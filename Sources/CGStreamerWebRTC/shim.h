// The C API of GStreamer's WebRTC library (webrtcbin's types), for the GStreamer Swift module.
// It calls itself unstable; its types have not changed since 1.16.
#define GST_USE_UNSTABLE_API
#include <gst/webrtc/webrtc.h>
#include <gst/sdp/sdp.h>

// webrtcbin's action signals take arguments, and g_signal_emit_by_name is variadic.

/// `set-local-description` or `set-remote-description`, answered through `promise`.
static inline void cwebrtc_set_description(GstElement *webrtc, const gchar *signal, GstWebRTCSessionDescription *description,
                                           GstPromise *promise) {
  g_signal_emit_by_name(webrtc, signal, description, promise);
}

/// `create-offer` or `create-answer` with no options, answered through `promise`.
static inline void cwebrtc_create_description(GstElement *webrtc, const gchar *signal, GstPromise *promise) {
  g_signal_emit_by_name(webrtc, signal, NULL, promise);
}

/// `add-ice-candidate`: a remote candidate of the media line `mline`.
static inline void cwebrtc_add_ice_candidate(GstElement *webrtc, guint mline, const gchar *candidate) {
  g_signal_emit_by_name(webrtc, "add-ice-candidate", mline, candidate);
}

/// `add-transceiver`: a new transceiver of `direction` for media of `caps`; the caller owns the
/// reference returned (transfer full), NULL when webrtcbin refuses.
static inline GstWebRTCRTPTransceiver *cwebrtc_add_transceiver(GstElement *webrtc, GstWebRTCRTPTransceiverDirection direction,
                                                               GstCaps *caps) {
  GstWebRTCRTPTransceiver *transceiver = NULL;
  g_signal_emit_by_name(webrtc, "add-transceiver", direction, caps, &transceiver);
  return transceiver;
}

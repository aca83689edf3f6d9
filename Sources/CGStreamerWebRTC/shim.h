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

/// The SDP text of a description (a property's boxed value), or NULL; free it with g_free.
static inline gchar *cwebrtc_description_text(const GValue *value) {
  GstWebRTCSessionDescription *description = g_value_get_boxed(value);
  return description == NULL ? NULL : gst_sdp_message_as_text(description->sdp);
}

/// The description of a promise's reply (`offer` or `answer`), as SDP text, or NULL.
static inline gchar *cwebrtc_reply_text(const GstStructure *reply, const gchar *field) {
  const GValue *value = gst_structure_get_value(reply, field);
  return value == NULL || !G_VALUE_HOLDS(value, GST_TYPE_WEBRTC_SESSION_DESCRIPTION) ? NULL : cwebrtc_description_text(value);
}

/// The message of a promise's reply that holds an error (an `error` field), or NULL.
static inline const gchar *cwebrtc_reply_error(const GstStructure *reply) {
  const GValue *value = gst_structure_get_value(reply, "error");
  if (value == NULL || !G_VALUE_HOLDS(value, G_TYPE_ERROR)) return NULL;
  const GError *error = g_value_get_boxed(value);
  return error == NULL ? NULL : error->message;
}

/// The nick of an enum property's value (`connected`, `complete`…), or NULL; static, not to be freed.
static inline const gchar *cwebrtc_enum_nick(gpointer object, const gchar *property) {
  GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(object), property);
  if (spec == NULL || !G_IS_PARAM_SPEC_ENUM(spec)) return NULL;
  gint value = 0;
  g_object_get(object, property, &value, NULL);
  GEnumValue *found = g_enum_get_value(G_PARAM_SPEC_ENUM(spec)->enum_class, value);
  return found == NULL ? NULL : found->value_nick;
}

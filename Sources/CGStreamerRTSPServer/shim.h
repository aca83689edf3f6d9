// The C API of gst-rtsp-server, for the GStreamer Swift module.
#include <gst/rtsp-server/rtsp-server.h>

// Variadic in C, so out of Swift's reach: a token that gives its bearer `role`.
static inline GstRTSPToken *crtsp_token_new_role(const gchar *role) {
  return gst_rtsp_token_new(GST_RTSP_TOKEN_MEDIA_FACTORY_ROLE, G_TYPE_STRING, role, NULL);
}

// Lets the bearers of `role` see and start the media of `factory`.
static inline void crtsp_media_factory_allow(GstRTSPMediaFactory *factory, const gchar *role) {
  gst_rtsp_media_factory_add_role(factory, role, GST_RTSP_PERM_MEDIA_FACTORY_ACCESS, G_TYPE_BOOLEAN, TRUE,
                                  GST_RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, G_TYPE_BOOLEAN, TRUE, NULL);
}

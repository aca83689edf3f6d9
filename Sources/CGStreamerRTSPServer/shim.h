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

// Whether one of `client`'s sessions plays `media`.
static inline gboolean crtsp_client_plays(GstRTSPClient *client, GstRTSPMedia *media) {
  gboolean plays = FALSE;
  GList *sessions = gst_rtsp_client_session_filter(client, NULL, NULL);
  for (GList *session = sessions; session && !plays; session = session->next) {
    GList *medias = gst_rtsp_session_filter(GST_RTSP_SESSION(session->data), NULL, NULL);
    for (GList *item = medias; item; item = item->next) {
      if (gst_rtsp_session_media_get_media(GST_RTSP_SESSION_MEDIA(item->data)) == media) plays = TRUE;
    }
    g_list_free_full(medias, g_object_unref);
  }
  g_list_free_full(sessions, g_object_unref);
  return plays;
}

static inline GstRTSPFilterResult crtsp_remove_if_plays(GstRTSPServer *server, GstRTSPClient *client,
                                                        gpointer media) {
  (void)server;
  return crtsp_client_plays(client, GST_RTSP_MEDIA(media)) ? GST_RTSP_FILTER_REMOVE : GST_RTSP_FILTER_KEEP;
}

// A job for the server's thread: its server (alive while that thread runs) and a media, held.
typedef struct {
  GstRTSPServer *server;
  GstRTSPMedia *media;
} CRTSPCloseJob;

static inline gboolean crtsp_close_job_run(gpointer data) {
  CRTSPCloseJob *job = data;
  g_list_free(gst_rtsp_server_client_filter(job->server, crtsp_remove_if_plays, job->media));
  return G_SOURCE_REMOVE;
}

static inline void crtsp_close_job_free(gpointer data) {
  CRTSPCloseJob *job = data;
  g_object_unref(job->media);
  g_free(job);
}

// From any thread: on the thread that iterates `context` (the server's), closes the connections
// of the clients that play `media`, which ends their sessions. Never inline on the caller's
// thread (a media's bus handler must not wait for the media's own teardown); a job left when the
// context goes is freed unrun.
static inline void crtsp_server_close_clients_of(GMainContext *context, GstRTSPServer *server,
                                                 GstRTSPMedia *media) {
  CRTSPCloseJob *job = g_new(CRTSPCloseJob, 1);
  job->server = server;
  job->media = g_object_ref(media);
  GSource *source = g_idle_source_new();
  g_source_set_callback(source, crtsp_close_job_run, job, crtsp_close_job_free);
  g_source_attach(source, context);
  g_source_unref(source);
}

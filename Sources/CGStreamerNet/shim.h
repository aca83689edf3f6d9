// The C API of GStreamer's net library, for the GStreamer Swift module.
#include <gst/net/net.h>

/// The sender's address of a buffer a udpsrc received (`retrieve-sender-address`), as text and
/// port; FALSE when the buffer has none. `host` must hold 64 bytes.
static inline gboolean cgst_buffer_sender_address(GstBuffer *buffer, gchar *host, guint16 *port) {
  GstNetAddressMeta *meta = gst_buffer_get_net_address_meta(buffer);
  if (meta == NULL || !G_IS_INET_SOCKET_ADDRESS(meta->addr)) return FALSE;
  GInetSocketAddress *address = G_INET_SOCKET_ADDRESS(meta->addr);
  gchar *text = g_inet_address_to_string(g_inet_socket_address_get_address(address));
  g_strlcpy(host, text, 64);
  g_free(text);
  *port = g_inet_socket_address_get_port(address);
  return TRUE;
}

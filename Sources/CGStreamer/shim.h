// Shims for GStreamer and GLib macros and variadic functions that Swift cannot import.
// Each shim is one macro or one call, with no logic of its own.
#ifndef CGSTREAMER_SHIM_H
#define CGSTREAMER_SHIM_H

#include <gst/gst.h>
#include <gio/gio.h>

// MARK: - Fundamental and boxed GTypes (macros in GLib and GStreamer)

static inline GType cgst_type_invalid(void) { return G_TYPE_INVALID; }
static inline GType cgst_type_boolean(void) { return G_TYPE_BOOLEAN; }
static inline GType cgst_type_char(void) { return G_TYPE_CHAR; }
static inline GType cgst_type_uchar(void) { return G_TYPE_UCHAR; }
static inline GType cgst_type_int(void) { return G_TYPE_INT; }
static inline GType cgst_type_uint(void) { return G_TYPE_UINT; }
static inline GType cgst_type_long(void) { return G_TYPE_LONG; }
static inline GType cgst_type_ulong(void) { return G_TYPE_ULONG; }
static inline GType cgst_type_int64(void) { return G_TYPE_INT64; }
static inline GType cgst_type_uint64(void) { return G_TYPE_UINT64; }
static inline GType cgst_type_float(void) { return G_TYPE_FLOAT; }
static inline GType cgst_type_double(void) { return G_TYPE_DOUBLE; }
static inline GType cgst_type_string(void) { return G_TYPE_STRING; }
static inline GType cgst_type_enum(void) { return G_TYPE_ENUM; }
static inline GType cgst_type_flags(void) { return G_TYPE_FLAGS; }
static inline GType cgst_type_object(void) { return G_TYPE_OBJECT; }
static inline GType cgst_type_boxed(void) { return G_TYPE_BOXED; }
static inline GType cgst_type_pointer(void) { return G_TYPE_POINTER; }
static inline GType cgst_type_fraction(void) { return GST_TYPE_FRACTION; }
static inline GType cgst_type_int_range(void) { return GST_TYPE_INT_RANGE; }
static inline GType cgst_type_int64_range(void) { return GST_TYPE_INT64_RANGE; }
static inline GType cgst_type_double_range(void) { return GST_TYPE_DOUBLE_RANGE; }
static inline GType cgst_type_fraction_range(void) { return GST_TYPE_FRACTION_RANGE; }
static inline GType cgst_type_list(void) { return GST_TYPE_LIST; }
static inline GType cgst_type_array(void) { return GST_TYPE_ARRAY; }
static inline GType cgst_type_caps(void) { return GST_TYPE_CAPS; }
static inline GType cgst_type_structure(void) { return GST_TYPE_STRUCTURE; }
static inline GType cgst_type_element(void) { return GST_TYPE_ELEMENT; }
static inline GType cgst_type_bin(void) { return GST_TYPE_BIN; }
static inline GType cgst_type_pipeline(void) { return GST_TYPE_PIPELINE; }
static inline GType cgst_type_pad(void) { return GST_TYPE_PAD; }
static inline GType cgst_type_bus(void) { return GST_TYPE_BUS; }
static inline GType cgst_type_device(void) { return GST_TYPE_DEVICE; }
static inline GType cgst_type_device_provider(void) { return GST_TYPE_DEVICE_PROVIDER; }
static inline GType cgst_type_clock(void) { return GST_TYPE_CLOCK; }

// MARK: - Instance type checks (macros)

static inline GType cgst_instance_type(gpointer instance) { return G_TYPE_FROM_INSTANCE(instance); }
static inline GType cgst_value_type(const GValue *value) { return G_VALUE_TYPE(value); }
static inline GType cgst_type_fundamental(GType type) { return G_TYPE_FUNDAMENTAL(type); }

// MARK: - Properties (G_OBJECT_GET_CLASS is a macro)

static inline GParamSpec *cgst_find_property(gpointer object, const gchar *name) {
  return g_object_class_find_property(G_OBJECT_GET_CLASS(object), name);
}

// MARK: - Element messages (GST_ELEMENT_ERROR and GST_ELEMENT_WARNING are macros over gst_element_message_full)

static inline void cgst_element_post_message(GstElement *element, GstMessageType type, const gchar *text,
                                             const gchar *debug) {
  gst_element_message_full(element, type, GST_CORE_ERROR, GST_CORE_ERROR_FAILED, g_strdup(text), g_strdup(debug),
                           __FILE__, G_STRFUNC, __LINE__);
}

// MARK: - Signals (g_signal_connect is a macro; g_signal_emit_by_name is variadic)

static inline gulong cgst_signal_connect(gpointer instance, const gchar *signal, GCallback handler,
                                         gpointer data, GClosureNotify destroy) {
  return g_signal_connect_data(instance, signal, handler, data, destroy, (GConnectFlags)0);
}

static inline void cgst_signal_emit_returning_pointer(gpointer instance, const gchar *signal, gpointer *result) {
  g_signal_emit_by_name(instance, signal, result);
}

static inline void cgst_signal_emit(gpointer instance, const gchar *signal) { g_signal_emit_by_name(instance, signal); }

// MARK: - Mini objects (the make_writable family are macros)

static inline GstMiniObject *cgst_mini_object(gpointer object) { return GST_MINI_OBJECT_CAST(object); }
static inline gint cgst_mini_object_refcount(gpointer object) { return GST_MINI_OBJECT_REFCOUNT_VALUE(object); }
static inline gint cgst_object_refcount(gpointer object) { return GST_OBJECT_REFCOUNT_VALUE(object); }

// MARK: - Clock time

static inline GstClockTime cgst_clock_time_none(void) { return GST_CLOCK_TIME_NONE; }

#endif

// Stand-ins for hardware encoders (see include/RevueEncoderStandIns.h): a GstBin around
// `capsfilter (NV12) ! x264enc` (`! videoconvert ! vp8enc` for vavp8enc), its pads ghosted,
// with the properties of the element it stands in for, in that element's units (GStreamer's
// documentation of each), translated to the software encoder's. Test-only: the tests of
// RevueSDK register them.

#include "RevueEncoderStandIns.h"

#include <gst/gst.h>
#include <string.h>

typedef enum { KIND_VA, KIND_VA_VP8, KIND_VAAPI, KIND_V4L2, KIND_NV } Kind;

typedef struct {
  Kind kind;
  gboolean fails;
  const char *name;
} StandInClassData;

typedef struct {
  GstBin parent;
  GstElement *encoder;  // x264enc, or vp8enc for vavp8enc
  gboolean vp8;
  guint bitrate_kbps;  // what the encoder is given
  guint keyframe_interval;
  gint rate_control;
  gint preset;
  guint b_frames;
  gboolean zerolatency;
  GstStructure *extra_controls;
  gint keyframe_requests;  // atomic
} StandIn;

typedef struct {
  GstBinClass parent;
  StandInClassData *data;
} StandInClass;

enum {
  PROP_0,
  PROP_BITRATE,
  PROP_KEY_INT_MAX,
  PROP_KEYFRAME_PERIOD,
  PROP_GOP_SIZE,
  PROP_RATE_CONTROL,
  PROP_RC_MODE,
  PROP_PRESET,
  PROP_ZEROLATENCY,
  PROP_EXTRA_CONTROLS,
  PROP_B_FRAMES,
  PROP_MAX_BFRAMES,
  PROP_KEYFRAME_REQUESTS,
};

static GstBinClass *parent_class_for(GObject *object) {
  return g_type_class_peek_parent(G_OBJECT_GET_CLASS(object));
}

static GType rate_control_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {1, "Constant quantizer", "cqp"},
      {2, "Constant bitrate", "cbr"},
      {4, "Variable bitrate", "vbr"},
      {0, NULL, NULL},
  };
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("RevueStandInRateControl", values));
  return type;
}

static GType rc_mode_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {0, "Default", "default"},
      {2, "Constant bitrate", "cbr"},
      {3, "Variable bitrate", "vbr"},
      {0, NULL, NULL},
  };
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("RevueStandInRCMode", values));
  return type;
}

static GType preset_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {0, "Default", "default"},
      {3, "Low Latency", "low-latency"},
      {4, "Low Latency, High Quality", "low-latency-hq"},
      {5, "Low Latency, High Performance", "low-latency-hp"},
      {0, NULL, NULL},
  };
  if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("RevueStandInPreset", values));
  return type;
}

/// Gives the encoder the bitrate and keyframe interval the stand-in was set to, in its units:
/// x264enc's `bitrate` in kbit/s, vp8enc's `target-bitrate` in bit/s.
static void apply(StandIn *self) {
  if (!self->encoder) return;
  if (self->vp8)
    g_object_set(
        self->encoder, "target-bitrate", (gint)MAX(1u, self->bitrate_kbps) * 1000, "keyframe-max-dist",
        (gint)self->keyframe_interval, NULL);
  else
    g_object_set(self->encoder, "bitrate", MAX(1u, self->bitrate_kbps), "key-int-max", self->keyframe_interval, NULL);
}

static void set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
  StandIn *self = (StandIn *)object;
  GST_OBJECT_LOCK(self);
  switch (id) {
    case PROP_BITRATE: self->bitrate_kbps = g_value_get_uint(value); break;
    case PROP_KEY_INT_MAX:
    case PROP_KEYFRAME_PERIOD: self->keyframe_interval = g_value_get_uint(value); break;
    case PROP_GOP_SIZE: self->keyframe_interval = (guint)MAX(0, g_value_get_int(value)); break;
    case PROP_RATE_CONTROL:
    case PROP_RC_MODE: self->rate_control = g_value_get_enum(value); break;
    case PROP_PRESET: self->preset = g_value_get_enum(value); break;
    case PROP_ZEROLATENCY: self->zerolatency = g_value_get_boolean(value); break;
    case PROP_B_FRAMES:
    case PROP_MAX_BFRAMES: self->b_frames = g_value_get_uint(value); break;
    case PROP_EXTRA_CONTROLS: {
      // v4l2h264enc's controls: `video_bitrate` in bit/s, `h264_i_frame_period` in frames.
      const GstStructure *controls = gst_value_get_structure(value);
      if (self->extra_controls) gst_structure_free(self->extra_controls);
      self->extra_controls = controls ? gst_structure_copy(controls) : NULL;
      gint number;
      if (controls && gst_structure_get_int(controls, "video_bitrate", &number))
        self->bitrate_kbps = (guint)((number + 500) / 1000);
      if (controls && gst_structure_get_int(controls, "h264_i_frame_period", &number))
        self->keyframe_interval = (guint)MAX(0, number);
      break;
    }
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
  apply(self);
}

static void get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec) {
  StandIn *self = (StandIn *)object;
  GST_OBJECT_LOCK(self);
  switch (id) {
    case PROP_BITRATE: g_value_set_uint(value, self->bitrate_kbps); break;
    case PROP_KEY_INT_MAX:
    case PROP_KEYFRAME_PERIOD: g_value_set_uint(value, self->keyframe_interval); break;
    case PROP_GOP_SIZE: g_value_set_int(value, (gint)self->keyframe_interval); break;
    case PROP_RATE_CONTROL:
    case PROP_RC_MODE: g_value_set_enum(value, self->rate_control); break;
    case PROP_PRESET: g_value_set_enum(value, self->preset); break;
    case PROP_ZEROLATENCY: g_value_set_boolean(value, self->zerolatency); break;
    case PROP_B_FRAMES:
    case PROP_MAX_BFRAMES: g_value_set_uint(value, self->b_frames); break;
    case PROP_EXTRA_CONTROLS: gst_value_set_structure(value, self->extra_controls); break;
    case PROP_KEYFRAME_REQUESTS: g_value_set_uint(value, (guint)g_atomic_int_get(&self->keyframe_requests)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

/// Counts the keyframe requests (`GstForceKeyUnit`, upstream) that reach the encoder.
static GstPadProbeReturn count_requests(GstPad *pad, GstPadProbeInfo *info, gpointer user_data) {
  (void)pad;
  GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
  const GstStructure *structure = event ? gst_event_get_structure(event) : NULL;
  if (structure && gst_structure_has_name(structure, "GstForceKeyUnit"))
    g_atomic_int_inc(&((StandIn *)user_data)->keyframe_requests);
  return GST_PAD_PROBE_OK;
}

static GstStateChangeReturn change_state(GstElement *element, GstStateChange transition) {
  StandInClass *klass = (StandInClass *)G_OBJECT_GET_CLASS(element);
  if (klass->data->fails && transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    GST_ELEMENT_ERROR(
        element, RESOURCE, OPEN_READ_WRITE, ("%s stand-in: no encoding device", klass->data->name),
        ("a stand-in made to fail at start, as hardware that cannot be opened"));
    return GST_STATE_CHANGE_FAILURE;
  }
  return GST_ELEMENT_CLASS(parent_class_for(G_OBJECT(element)))->change_state(element, transition);
}

static void finalize(GObject *object) {
  StandIn *self = (StandIn *)object;
  if (self->extra_controls) gst_structure_free(self->extra_controls);
  G_OBJECT_CLASS(parent_class_for(object))->finalize(object);
}

static void instance_init(GTypeInstance *instance, gpointer g_class) {
  StandIn *self = (StandIn *)instance;
  self->vp8 = ((StandInClass *)g_class)->data->kind == KIND_VA_VP8;
  self->bitrate_kbps = 2048;
  self->keyframe_interval = 60;
  self->rate_control = 2;
  GstElement *filter = gst_element_factory_make("capsfilter", NULL);
  // vavp8enc's stand-in takes NV12 as the real one does; vp8enc takes I420 alone.
  GstElement *convert = self->vp8 ? gst_element_factory_make("videoconvert", NULL) : NULL;
  self->encoder = gst_element_factory_make(self->vp8 ? "vp8enc" : "x264enc", NULL);
  if (!filter || !self->encoder || (self->vp8 && !convert)) return;
  GstCaps *caps = gst_caps_from_string("video/x-raw, format=NV12");
  g_object_set(filter, "caps", caps, NULL);
  gst_caps_unref(caps);
  if (self->vp8) {
    g_object_set(self->encoder, "deadline", (gint64)1, "lag-in-frames", 0, NULL);
    gst_util_set_object_arg(G_OBJECT(self->encoder), "end-usage", "cbr");
    gst_bin_add_many(GST_BIN(self), filter, convert, self->encoder, NULL);
    gst_element_link_many(filter, convert, self->encoder, NULL);
  } else {
    gst_util_set_object_arg(G_OBJECT(self->encoder), "tune", "zerolatency");
    gst_util_set_object_arg(G_OBJECT(self->encoder), "speed-preset", "ultrafast");
    gst_bin_add_many(GST_BIN(self), filter, self->encoder, NULL);
    gst_element_link(filter, self->encoder);
  }
  apply(self);
  GstPad *sink = gst_element_get_static_pad(filter, "sink");
  GstPad *src = gst_element_get_static_pad(self->encoder, "src");
  gst_element_add_pad(GST_ELEMENT(self), gst_ghost_pad_new("sink", sink));
  gst_element_add_pad(GST_ELEMENT(self), gst_ghost_pad_new("src", src));
  gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM, count_requests, self, NULL);
  gst_object_unref(sink);
  gst_object_unref(src);
}

static void class_init(gpointer g_class, gpointer class_data) {
  StandInClassData *data = class_data;
  ((StandInClass *)g_class)->data = data;
  GObjectClass *object_class = G_OBJECT_CLASS(g_class);
  GstElementClass *element_class = GST_ELEMENT_CLASS(g_class);
  object_class->set_property = set_property;
  object_class->get_property = get_property;
  object_class->finalize = finalize;
  element_class->change_state = change_state;
  GParamFlags flags = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  switch (data->kind) {
    case KIND_VA_VP8:  // vavp8enc: `bitrate` in kbit/s, `key-int-max` in frames.
      g_object_class_install_property(
          object_class, PROP_BITRATE, g_param_spec_uint("bitrate", "Bitrate", "kbit/s", 0, 2048000, 0, flags));
      g_object_class_install_property(
          object_class, PROP_KEY_INT_MAX,
          g_param_spec_uint("key-int-max", "Key int max", "frames", 0, 1024, 0, flags));
      g_object_class_install_property(
          object_class, PROP_RATE_CONTROL,
          g_param_spec_enum("rate-control", "Rate control", "mode", rate_control_type(), 2, flags));
      break;
    case KIND_VA:  // vah264enc: `bitrate` in kbit/s, `key-int-max` in frames.
      g_object_class_install_property(
          object_class, PROP_BITRATE, g_param_spec_uint("bitrate", "Bitrate", "kbit/s", 0, 2048000, 2048, flags));
      g_object_class_install_property(
          object_class, PROP_KEY_INT_MAX,
          g_param_spec_uint("key-int-max", "Key int max", "frames", 0, 1024, 60, flags));
      g_object_class_install_property(
          object_class, PROP_RATE_CONTROL,
          g_param_spec_enum("rate-control", "Rate control", "mode", rate_control_type(), 2, flags));
      g_object_class_install_property(
          object_class, PROP_B_FRAMES, g_param_spec_uint("b-frames", "B-frames", "B-frames", 0, 31, 0, flags));
      break;
    case KIND_VAAPI:  // vaapih264enc: `bitrate` in kbit/s, `keyframe-period` in frames.
      g_object_class_install_property(
          object_class, PROP_BITRATE, g_param_spec_uint("bitrate", "Bitrate", "kbit/s", 0, 2048000, 2048, flags));
      g_object_class_install_property(
          object_class, PROP_KEYFRAME_PERIOD,
          g_param_spec_uint("keyframe-period", "Keyframe period", "frames", 0, G_MAXUINT32, 60, flags));
      g_object_class_install_property(
          object_class, PROP_RATE_CONTROL,
          g_param_spec_enum("rate-control", "Rate control", "mode", rate_control_type(), 2, flags));
      g_object_class_install_property(
          object_class, PROP_MAX_BFRAMES,
          g_param_spec_uint("max-bframes", "Max B-frames", "B-frames", 0, 10, 0, flags));
      break;
    case KIND_V4L2:  // v4l2h264enc: V4L2 controls in `extra-controls`.
      g_object_class_install_property(
          object_class, PROP_EXTRA_CONTROLS,
          g_param_spec_boxed("extra-controls", "Extra controls", "V4L2 controls", GST_TYPE_STRUCTURE, flags));
      break;
    case KIND_NV:  // nvh264enc: `bitrate` in kbit/s, `gop-size` in frames.
      g_object_class_install_property(
          object_class, PROP_BITRATE, g_param_spec_uint("bitrate", "Bitrate", "kbit/s", 0, 2048000, 0, flags));
      g_object_class_install_property(
          object_class, PROP_GOP_SIZE, g_param_spec_int("gop-size", "GOP size", "frames", -1, G_MAXINT, 75, flags));
      g_object_class_install_property(
          object_class, PROP_RC_MODE, g_param_spec_enum("rc-mode", "RC mode", "mode", rc_mode_type(), 0, flags));
      g_object_class_install_property(
          object_class, PROP_PRESET, g_param_spec_enum("preset", "Preset", "preset", preset_type(), 0, flags));
      g_object_class_install_property(
          object_class, PROP_ZEROLATENCY,
          g_param_spec_boolean("zerolatency", "Zero latency", "no reordering delay", FALSE, flags));
      break;
  }
  g_object_class_install_property(
      object_class, PROP_KEYFRAME_REQUESTS,
      g_param_spec_uint(
          "keyframe-requests", "Keyframe requests", "GstForceKeyUnit events that reached the encoder", 0, G_MAXUINT,
          0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  gst_element_class_set_static_metadata(
      element_class, data->name, "Codec/Encoder/Video/Hardware", "A test's stand-in for a hardware encoder", "Revue");
}

/// The factories made, by type name: kept alive (and added to the registry again) after being
/// removed from it, since their element classes point at them.
static GHashTable *made_factories(void) {
  static GHashTable *table = NULL;
  if (g_once_init_enter(&table))
    g_once_init_leave(&table, g_hash_table_new_full(g_str_hash, g_str_equal, g_free, gst_object_unref));
  return table;
}

static GMutex lock;

/// The type of the stand-in for `name` (failing at start when `fails`), made once; 0 when
/// `name` is not one it stands in for.
static GType stand_in_type(const char *name, int fails) {
  Kind kind;
  if (strcmp(name, "vah264enc") == 0) kind = KIND_VA;
  else if (strcmp(name, "vavp8enc") == 0) kind = KIND_VA_VP8;
  else if (strcmp(name, "vaapih264enc") == 0) kind = KIND_VAAPI;
  else if (strcmp(name, "v4l2h264enc") == 0) kind = KIND_V4L2;
  else if (strcmp(name, "nvh264enc") == 0) kind = KIND_NV;
  else return 0;
  gchar *type_name = g_strdup_printf("RevueStandIn_%s%s", name, fails ? "_failing" : "");
  GType type = g_type_from_name(type_name);
  if (type == 0) {
    StandInClassData *data = g_new0(StandInClassData, 1);
    *data = (StandInClassData){kind, fails != 0, g_intern_string(name)};
    GTypeInfo info = {
        .class_size = sizeof(StandInClass),
        .class_init = class_init,
        .class_data = data,
        .instance_size = sizeof(StandIn),
        .instance_init = instance_init,
    };
    type = g_type_register_static(GST_TYPE_BIN, type_name, &info, 0);
  }
  g_free(type_name);
  return type;
}

int revue_standin_register(const char *name, int fails) {
  GType type = stand_in_type(name, fails);
  if (type == 0) return 0;
  revue_standin_unregister(name);
  g_mutex_lock(&lock);
  const gchar *type_name = g_type_name(type);
  GstPluginFeature *factory = g_hash_table_lookup(made_factories(), type_name);
  int registered = 0;
  if (factory) {
    registered = gst_registry_add_feature(gst_registry_get(), factory) ? 1 : 0;
  } else {
    registered = gst_element_register(NULL, name, GST_RANK_NONE, type) ? 1 : 0;
    factory = gst_registry_lookup_feature(gst_registry_get(), name);
    if (factory) g_hash_table_insert(made_factories(), g_strdup(type_name), factory);  // takes the lookup's ref
  }
  g_mutex_unlock(&lock);
  return registered;
}

void revue_standin_unregister(const char *name) {
  GstRegistry *registry = gst_registry_get();
  GstPluginFeature *feature = gst_registry_lookup_feature(registry, name);
  if (!feature) return;
  gst_registry_remove_feature(registry, feature);
  gst_object_unref(feature);
}

#ifdef REVUE_STANDIN_PLUGIN
#define PACKAGE "revue"
// Built as a plugin of its own (cc -shared -DREVUE_STANDIN_PLUGIN …) for a test that runs the
// `revue` program: GST_PLUGIN_PATH pointing at it gives that process every stand-in.
static gboolean plugin_init(GstPlugin *plugin) {
  const char *names[] = {"vah264enc", "vaapih264enc", "nvh264enc", "v4l2h264enc", "vavp8enc"};
  for (size_t index = 0; index < G_N_ELEMENTS(names); index++)
    if (!gst_element_register(plugin, names[index], GST_RANK_NONE, stand_in_type(names[index], 0))) return FALSE;
  return TRUE;
}

GST_PLUGIN_DEFINE(
    GST_VERSION_MAJOR, GST_VERSION_MINOR, revuestandins, "Stand-ins for hardware encoders (tests)", plugin_init,
    "1.0", "LGPL", "revue", "https://gstreamer.freedesktop.org")
#endif

// V4L2's controls (linux/videodev2.h, from Debian's linux-libc-dev), for CameraZoom in
// RevueSDK: the ioctl requests are macros Swift cannot import, so each ioctl is made here, one
// call each; opening the device and reading the results are Swift's.
#include <linux/videodev2.h>
#include <sys/ioctl.h>

/// The id of the zoom control, `V4L2_CID_ZOOM_ABSOLUTE`.
static const unsigned int revue_v4l2_zoom_control = V4L2_CID_ZOOM_ABSOLUTE;

/// `VIDIOC_QUERYCTRL`: the range and flags of the control `query->id`. Returns 0 on success.
static inline int revue_v4l2_query_control(int fd, struct v4l2_queryctrl *query) {
  return ioctl(fd, VIDIOC_QUERYCTRL, query);
}

/// `VIDIOC_G_CTRL`: the value of the control `control->id`. Returns 0 on success.
static inline int revue_v4l2_get_control(int fd, struct v4l2_control *control) {
  return ioctl(fd, VIDIOC_G_CTRL, control);
}

/// `VIDIOC_S_CTRL`: sets the control `control->id` to `control->value`. Returns 0 on success.
static inline int revue_v4l2_set_control(int fd, struct v4l2_control *control) {
  return ioctl(fd, VIDIOC_S_CTRL, control);
}

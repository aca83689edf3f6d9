// V4L2's zoom control (linux/videodev2.h, from Debian's linux-libc-dev), for CameraZoom in
// RevueSDK: the ioctl requests are macros Swift cannot import, so the calls are made here.
#include <fcntl.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <unistd.h>

/// Reads the range of the zoom (`V4L2_CID_ZOOM_ABSOLUTE`) of the V4L2 device at `path`, and its
/// value now. Returns 1 when the device has the control and it is enabled, 0 otherwise.
static inline int revue_v4l2_zoom(const char *path, int *minimum, int *maximum, int *value) {
  int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  struct v4l2_queryctrl query = {.id = V4L2_CID_ZOOM_ABSOLUTE};
  struct v4l2_control control = {.id = V4L2_CID_ZOOM_ABSOLUTE};
  int found = ioctl(fd, VIDIOC_QUERYCTRL, &query) == 0 && !(query.flags & V4L2_CTRL_FLAG_DISABLED)
              && ioctl(fd, VIDIOC_G_CTRL, &control) == 0;
  close(fd);
  if (!found) return 0;
  *minimum = query.minimum;
  *maximum = query.maximum;
  *value = control.value;
  return 1;
}

/// Sets the zoom of the V4L2 device at `path` to `value`. Returns 1 when it was set.
static inline int revue_v4l2_set_zoom(const char *path, int value) {
  int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  struct v4l2_control control = {.id = V4L2_CID_ZOOM_ABSOLUTE, .value = value};
  int set = ioctl(fd, VIDIOC_S_CTRL, &control) == 0;
  close(fd);
  return set;
}

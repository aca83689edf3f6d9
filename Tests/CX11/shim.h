// Xlib, for the tests that play an application hosting a video view in a window of its own.
#include <X11/Xlib.h>
#include <X11/Xutil.h>

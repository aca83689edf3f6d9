#!/usr/bin/env bash
# Installs every Debian package Revue needs to build, run and test, and nothing when all are there.
# Idempotent: it runs apt-get (and apt-get update) only when a package is missing.
# The Swift toolchain itself (swift 6) is expected on PATH, as on the project's machines.
set -euo pipefail

packages=(
  pkg-config
  # A C compiler (cc): a CLI test builds the hardware-encoder stand-ins as a GStreamer plugin.
  gcc
  # Linux's V4L2 header (a camera's own zoom control).
  linux-libc-dev
  # GStreamer's C API for the GStreamer Swift module (core, base, app, video, audio, rtp, sdp, net, check).
  libgstreamer1.0-dev
  libgstreamer-plugins-base1.0-dev
  # The elements the node's pipelines use (revue check lists them) and the command-line tools.
  gstreamer1.0-tools
  gstreamer1.0-plugins-base
  gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad
  gstreamer1.0-plugins-ugly
  gstreamer1.0-libav
  gstreamer1.0-nice
  gstreamer1.0-x
  gstreamer1.0-gl
  gstreamer1.0-alsa
  gstreamer1.0-pulseaudio
  # gst-rtsp-server (revue serve --rtsp) and rtspsrc (its test's clients).
  libgstrtspserver-1.0-dev
  gstreamer1.0-rtsp
  # webrtcbin's library (WebRTC: the Janus viewer of the tests) and Janus itself, the media
  # server the tests publish into.
  libgstreamer-plugins-bad1.0-dev
  janus
  # WebRTC peers no one on the team wrote, for the WHIP tests: aiortc's endpoint and a front end
  # to Janus's VideoRoom (Tests/Peers), both on aiohttp.
  python3-aiortc
  python3-aiohttp
  # Real browsers as the viewers of revue serve --webrtc's page, headless: Chromium over its
  # DevTools protocol (Tests/Peers/chromium_viewer.py), Firefox over WebDriver BiDi
  # (Tests/Peers/firefox_viewer.py).
  chromium
  firefox-esr
  # Receivers of other makes: the interoperability tests play the room's SDP in ffmpeg and VLC
  # (and, with srt, read `revue stream --to srt://`).
  ffmpeg
  # An RTMP server for `revue stream --to rtmp://` (started by the tests on loopback, with a
  # config of their own in a temporary directory).
  nginx-light
  libnginx-mod-rtmp
  vlc-bin
  vlc-plugin-base
  # A display for the tests of window sinks (a headless machine has none), and a font for the
  # video view's debug overlay (textoverlay).
  xvfb
  fonts-dejavu-core
  # Xlib's headers: a test plays an application that hosts a video view in its own window.
  libx11-dev
  # A Wayland compositor (headless) for the test of a video view on Wayland.
  weston
  # TLS for WHIP and WHEP over https (GIO's gnutls module, loaded only for an https connection),
  # and openssl, which makes the tests' certificate of a private authority.
  glib-networking
  openssl
  # `ss`: the tests wait until the process has closed its connections to a display before they
  # stop its X server.
  iproute2
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp)
  if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "setup: apt-get failed" >&2
    exit 1
  fi
  rm -f "$log"
fi

command -v swift >/dev/null || { echo "setup: swift 6 is not on PATH (install the Swift toolchain)" >&2; exit 1; }

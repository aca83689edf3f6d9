// swift-tools-version:6.0
import PackageDescription

/// One C module per GStreamer pkg-config file, each with the Debian package that provides it.
let cModules: [(name: String, pkgConfig: String, apt: String)] = [
  ("CGStreamer", "gstreamer-1.0", "libgstreamer1.0-dev"),
  ("CGStreamerBase", "gstreamer-base-1.0", "libgstreamer1.0-dev"),
  ("CGStreamerApp", "gstreamer-app-1.0", "libgstreamer-plugins-base1.0-dev"),
  ("CGStreamerVideo", "gstreamer-video-1.0", "libgstreamer-plugins-base1.0-dev"),
  ("CGStreamerAudio", "gstreamer-audio-1.0", "libgstreamer-plugins-base1.0-dev"),
  ("CGStreamerRTP", "gstreamer-rtp-1.0", "libgstreamer-plugins-base1.0-dev"),
  ("CGStreamerSDP", "gstreamer-sdp-1.0", "libgstreamer-plugins-base1.0-dev"),
  ("CGStreamerNet", "gstreamer-net-1.0", "libgstreamer1.0-dev"),
  ("CGStreamerRTSPServer", "gstreamer-rtsp-server-1.0", "libgstrtspserver-1.0-dev"),
  ("CGStreamerWebRTC", "gstreamer-webrtc-1.0", "libgstreamer-plugins-bad1.0-dev"),
]

let package = Package(
  name: "Revue",
  products: [
    .library(name: "GStreamer", targets: ["GStreamer"]),
    .library(name: "RevueSDK", targets: ["RevueSDK"]),
    .library(name: "RevueLab", targets: ["RevueLab"]),
    .library(name: "RevueVideoSDK", targets: ["RevueVideoSDK"]),
    .library(name: "RevueSora", targets: ["RevueSora"]),
    .library(name: "RevueLiveKit", targets: ["RevueLiveKit"]),
    .executable(name: "revue", targets: ["revue"]),
  ],
  targets: cModules.map {
    .systemLibrary(name: $0.name, pkgConfig: $0.pkgConfig, providers: [.apt([$0.apt])])
  } + [
    .target(
      name: "GStreamer", dependencies: cModules.map { .target(name: $0.name) },
      // gio (part of GLib) reads the sender addresses of received packets.
      linkerSettings: [.linkedLibrary("gio-2.0")]),
    // GStreamer's check library (GstHarness, GstTestClock) and the harness over it: an element
    // driven by hand, for tests. A module of its own, so that only the tests link it.
    .systemLibrary(
      name: "CGStreamerCheck", pkgConfig: "gstreamer-check-1.0", providers: [.apt(["libgstreamer1.0-dev"])]),
    .target(name: "GStreamerCheck", dependencies: ["GStreamer", "CGStreamerCheck"]),
    // V4L2's zoom control (linux/videodev2.h): a camera's own zoom.
    .systemLibrary(name: "CV4L2", providers: [.apt(["linux-libc-dev"])]),
    .target(
      name: "RevueSDK", dependencies: ["GStreamer", "CV4L2"],
      resources: [.copy("Resources/Cameras"), .copy("Resources/Pipelines")]),
    // Tools to try Revue on bad links: a link emulator and stamped frames judged at the receiver
    // (used by `revue link`, `revue-bench` and the tests).
    .target(name: "RevueLab", dependencies: ["RevueSDK"]),
    // VideoSDK's names (seed 002) over RevueSDK: custom camera, microphone and screen share tracks.
    .target(name: "RevueVideoSDK", dependencies: ["RevueSDK"]),
    // Sora's camera capturer (seed 003) over RevueSDK's camera.
    .target(name: "RevueSora", dependencies: ["RevueSDK"]),
    // LiveKit's names (seed 004) that RevueSDK spells differently: VideoFrame processors, ValueOrAbsent, device types.
    .target(name: "RevueLiveKit", dependencies: ["RevueSDK"]),
    // What the two programs, `revue` and `revue-bench`, share: parsing their command lines and
    // reporting their errors, the monotonic clock, blocking work on a thread of its own.
    .target(name: "RevueCommandLine"),
    // The one runner of child processes, for the bench and the tests: output read as it comes,
    // deadlines, and no child left behind.
    .target(name: "RevueProcess"),
    // The node's bound on glibc's malloc arenas, set before main (Sources/CMalloc/arenas.c).
    .target(name: "CMalloc"),
    .executableTarget(name: "revue", dependencies: ["RevueSDK", "RevueLab", "RevueCommandLine", "CMalloc"]),
    // The benchmark (docs/benchmarks.md): the SDK measured against gst-launch-1.0, each side a
    // child process of its own (the Revue side is `revue-bench --child …`; the soak runs `revue`).
    .executableTarget(
      name: "revue-bench", dependencies: ["RevueSDK", "RevueLab", "RevueProcess", "RevueCommandLine", "CMalloc"]),
    // Fuzz targets (docs/fuzzing.md): what each feeds the SDK, and `revue-fuzz`, which replays
    // files through them, or built with `-sanitize=fuzzer -DFUZZING` (scripts/fuzz.sh) is libFuzzer.
    .target(name: "RevueFuzzTargets", dependencies: ["RevueSDK", "GStreamer"], path: "Fuzz/Targets"),
    .executableTarget(name: "revue-fuzz", dependencies: ["RevueFuzzTargets"], path: "Fuzz/Main"),
    .target(
      name: "RevueTestSupport", dependencies: ["GStreamer", "RevueProcess", "RevueTSanSupport"],
      path: "Tests/RevueTestSupport"),
    // Virtual cameras and a frame-awaiting renderer for the tests of the SDK and of its faces.
    .target(
      name: "RevueSDKTestSupport", dependencies: ["RevueSDK", "RevueTestSupport"], path: "Tests/RevueSDKTestSupport"),
    // Under `swift test --sanitize=thread` only: tells ThreadSanitizer about Mutex's contended path.
    .target(name: "RevueTSanSupport", path: "Tests/RevueTSanSupport"),
    // Stand-ins for hardware encoders (bins around x264enc registered as `vah264enc`,
    // `v4l2h264enc`, …), for the tests of the encoder choice on machines without the hardware.
    .target(name: "RevueEncoderStandIns", dependencies: ["CGStreamer"], path: "Tests/RevueEncoderStandIns"),
    .testTarget(name: "GStreamerTests", dependencies: ["GStreamer", "GStreamerCheck", "RevueTestSupport"]),
    // Xlib, for the tests that play an application hosting a video view in its own window.
    .systemLibrary(name: "CX11", path: "Tests/CX11", pkgConfig: "x11", providers: [.apt(["libx11-dev"])]),
    .testTarget(
      name: "RevueSDKTests",
      dependencies: [
        "RevueSDK", "RevueLab", "RevueTestSupport", "CX11", "RevueSDKTestSupport", "GStreamerCheck",
        "RevueEncoderStandIns",
      ]),
    // The process runner's own: output, status, environment, deadlines, no child left behind.
    .testTarget(name: "RevueProcessTests", dependencies: ["RevueProcess", "RevueTestSupport"]),
    // The bench's: its command line, its scenarios and trials, a smoke run, the soak.
    .testTarget(
      name: "RevueBenchTests",
      dependencies: ["revue-bench", "RevueCommandLine", "RevueSDK", "RevueLab", "RevueProcess", "RevueTestSupport"]),
    // RevueLab's own: the link emulator, stamped frames, the probe and the judge.
    .testTarget(name: "RevueLabTests", dependencies: ["RevueLab", "RevueSDK", "GStreamer", "RevueTestSupport"]),
    .testTarget(
      name: "RevueCLITests", dependencies: ["revue", "RevueCommandLine", "RevueSDK", "RevueLab", "RevueTestSupport"]),
    .testTarget(
      name: "RevueVideoSDKTests",
      dependencies: ["RevueVideoSDK", "RevueSDK", "RevueTestSupport", "RevueSDKTestSupport"]),
    .testTarget(
      name: "RevueSoraTests", dependencies: ["RevueSora", "RevueSDK", "RevueTestSupport", "RevueSDKTestSupport"]),
    .testTarget(
      name: "RevueLiveKitTests", dependencies: ["RevueLiveKit", "RevueSDK", "RevueTestSupport", "RevueSDKTestSupport"]),
    .testTarget(name: "FuzzTests", dependencies: ["RevueFuzzTargets", "RevueTestSupport"]),
  ],
  swiftLanguageModes: [.v6]
)

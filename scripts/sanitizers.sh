#!/usr/bin/env bash
# Runs the tests under a sanitizer (docs/sanitizers.md).
#
#   scripts/sanitizers.sh address [--ci] [swift test options...]   AddressSanitizer + LeakSanitizer, every test
#   scripts/sanitizers.sh thread [swift test options...]           ThreadSanitizer, the suites GLib allows
#
# Each sanitizer builds into a folder of its own (.build/asan, .build/tsan), so the plain build
# stays as it is. `--ci` runs the address run's CI subset (see docs/sanitizers.md) instead of every
# test. Suppressions, each with its reason, are in scripts/sanitizers/{lsan,tsan}.supp. The tests
# see REVUE_SANITIZER (address or thread) and relax timing thresholds only, never what they check.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizer="${1:-}"
shift || true
supp="$PWD/scripts/sanitizers"
# Swift's crash backtracer reads a crashed thread's stack from another thread, which ASan reports
# as a stack-buffer-underflow of its own; the sanitizer prints the stack instead.
export SWIFT_BACKTRACE=enable=no
export REVUE_SANITIZER="$sanitizer"

case "$sanitizer" in
  address)
    filter=()
    if [[ "${1:-}" == "--ci" ]]; then
      shift
      # The suites that take input from outside and own buffers and C memory (docs/sanitizers.md).
      filter=(--filter 'GStreamerTests|FuzzTests|PixelBufferTests|AudioPCMBufferTests|PipelineConfig|SRTP|HostileInput|SenderLatch|SourceFilter|ReceiveTests|BufferCapturer')
    fi
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
    exec swift test --sanitize=address --build-path .build/asan --no-parallel "${filter[@]}" "$@"
    ;;
  thread)
    # GLib's and GStreamer's threads synchronize through GLib's own uninstrumented mutexes, so
    # only suites whose shared state is Swift's (Mutex, actors, atomics) run (docs/sanitizers.md).
    export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=0:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
    exec swift test --sanitize=thread --build-path .build/tsan --no-parallel "$@"
    ;;
  *)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# Runs the tests under a sanitizer (docs/sanitizers.md).
#
#   scripts/sanitizers.sh address [swift test options...]   AddressSanitizer + LeakSanitizer, every test, in parallel
#   scripts/sanitizers.sh thread [swift test options...]    ThreadSanitizer, every test but the CLI's and the bench's end to end, one at a time
#
# Each sanitizer builds into a folder of its own (.build/asan, .build/tsan), so the plain build
# stays as it is. Suppressions, each with its reason, are in scripts/sanitizers/{lsan,tsan}.supp.
# The tests see REVUE_SANITIZER (address or thread) and relax timing thresholds only, never what
# they check. Options after the sanitizer go to swift test (--filter NAME, for instance), and
# REVUE_TEST_TIERS picks tiers as for swift test (scripts/test.sh takes unit,pipeline,smoke).
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
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
    exec swift test --sanitize=address --build-path .build/asan "$@"
    ;;
  thread)
    # Every test but the end-to-end ones of the CLI and the bench, whose `revue` and `revue-bench`
    # processes lack the test binary's Mutex annotations (docs/sanitizers.md).
    filter=(--filter 'RevueSDKTests|RevueLabTests|RevueProcessTests|GStreamerTests|FuzzTests|CommandParsingTests|StreamOptionsTests|BenchParsingTests')
    # GLib's slice allocator hands a freed GstBuffer's memory to the next buffer, on another
    # thread, through its own uninstrumented lock; with malloc, ThreadSanitizer sees each as new.
    export G_SLICE=always-malloc
    export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=0:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
    exec swift test --sanitize=thread --build-path .build/tsan --no-parallel "${filter[@]}" "$@"
    ;;
  *)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac

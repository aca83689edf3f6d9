#!/usr/bin/env bash
# Sets up a fresh Debian machine (scripts/setup.sh), builds everything and runs every test. CI
# (.ci/run) runs this, then builds the API reference (scripts/docs.sh: a DocC warning or an
# undocumented public symbol fails it), fuzzes each fuzz target for 20 s (scripts/fuzz.sh, docs/fuzzing.md)
# and runs the unit and pipeline tiers and the realtime smoke set again under AddressSanitizer
# and LeakSanitizer (scripts/sanitizers.sh address, docs/sanitizers.md); `scripts/test.sh --ci`
# does the same here. The tests run as `swift test` runs them, in parallel: the tests that need
# the process to themselves (the lifetime tests count its GStreamer objects and threads; the
# link trials need both cores) say so with .wholeProcess (Tests/RevueTestSupport/ProcessGate.swift),
# and run after the others. `swift test --no-parallel` runs them one at a time.
#
# Each suite is in a tier (Tests/RevueTestSupport/Tiers.swift): unit (pure logic), pipeline
# (short real pipelines), realtime (link trials, floods, soak, congestion) and interop (ffmpeg,
# VLC, Janus, aiortc). One tier or a few, every other skipped with the reason:
#   REVUE_TEST_TIERS=unit swift test                     # under a second
#   REVUE_TEST_TIERS=unit,pipeline swift test            # about a minute
#   REVUE_TEST_TIERS=realtime,interop swift test         # the long ones
# `smoke` in the list adds the realtime tests marked as their family's short proof.
set -euo pipefail
cd "$(dirname "$0")/.."

ci=false
case "${1:-}" in
  --ci) ci=true ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--ci]" >&2; exit 2 ;;
esac

# Runs a step and says how long it took.
step() {
  local start=$SECONDS
  "$@"
  echo "step '$*': $((SECONDS - start)) s"
}

step scripts/setup.sh
step swift build --build-tests
step swift test
if $ci; then
  step scripts/docs.sh
  step scripts/fuzz.sh --seconds 20
  REVUE_TEST_TIERS=unit,pipeline,smoke step scripts/sanitizers.sh address
fi

#!/usr/bin/env bash
# Sets up a fresh Debian machine (scripts/setup.sh), builds everything and runs every test, then
# fuzzes each fuzz target for 20 s (scripts/fuzz.sh, docs/fuzzing.md) and runs every test again
# under AddressSanitizer and LeakSanitizer (scripts/sanitizers.sh address, docs/sanitizers.md).
# Tests run one at a time (--no-parallel), the order the suites were written in. Plain
# `swift test` runs them in parallel and passes too: the tests that need the process to
# themselves (the lifetime tests count its GStreamer objects and threads) say so with
# .wholeProcess (Tests/RevueTestSupport/ProcessGate.swift).
set -euo pipefail
cd "$(dirname "$0")/.."

# Runs a step and says how long it took.
step() {
  local start=$SECONDS
  "$@"
  echo "step '$*': $((SECONDS - start)) s"
}

step scripts/setup.sh
step swift build
step swift test --no-parallel
step scripts/fuzz.sh --seconds 20
step scripts/sanitizers.sh address

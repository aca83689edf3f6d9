#!/usr/bin/env bash
# Sets up a fresh Debian machine (scripts/setup.sh), builds everything and runs every test.
# Tests run one at a time (--no-parallel), the order the suites were written in. Plain
# `swift test` runs them in parallel and passes too: the tests that need the process to
# themselves (the lifetime tests count its GStreamer objects and threads) say so with
# .wholeProcess (Tests/RevueTestSupport/ProcessGate.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build
swift test --no-parallel

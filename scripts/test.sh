#!/usr/bin/env bash
# Sets up a fresh Debian machine (scripts/setup.sh), builds everything and runs every test.
# Tests run one at a time (--no-parallel): the lifetime tests count live GStreamer objects and
# threads of the whole process, which other tests running beside them would disturb.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build
swift test --no-parallel

#!/usr/bin/env bash
# Builds the API reference of GStreamer, RevueSDK and the seeds' faces with the toolchain's own
# DocC: `swift package dump-symbol-graph` (the public symbols of the debug build), then
# `docc convert` per module, with its catalogue (Sources/MODULE/MODULE.docc: the landing page,
# getting started, the porting guide of each seed), into a static site under OUT (default
# .build/docs/MODULE). Fails on
# a DocC warning (a broken symbol link) and on a public symbol without a doc comment, listing
# them.
#
# Usage: scripts/docs.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.build/docs}"
modules=(GStreamer RevueSDK RevueVideoSDK RevueSora RevueLiveKit)

# Its output shown on standard error as it is (not by `tee /dev/stderr`, which opens the file
# standard error is anew: a CI log redirected to a file was truncated to what came after).
dumped=$(swift package dump-symbol-graph --minimum-access-level public --skip-synthesized-members 2>&1 \
  | grep -v prohibited || true)
echo "$dumped" >&2
written=$(echo "$dumped" | sed -n 's/^Files written to //p' | tail -1)
if [ -z "$written" ] || [ ! -d "$written" ]; then
  echo "docs.sh: dump-symbol-graph wrote no symbol graphs" >&2
  exit 1
fi

status=0
mkdir -p "$out"
for module in "${modules[@]}"; do
  graphs=$(mktemp -d)
  trap 'rm -rf "$graphs"' EXIT
  cp "$written/$module.symbols.json" "$graphs/"
  cp "$written/$module"@*.symbols.json "$graphs/" 2>/dev/null || true
  # Public symbols of the module without a doc comment (extensions of other modules' types
  # included, members a protocol's default implementation gives excluded).
  undocumented=$(/usr/bin/python3 - "$graphs/$module.symbols.json" <<'PY'
import json, sys
graph = json.load(open(sys.argv[1]))
for symbol in graph["symbols"]:
    if "docComment" not in symbol and symbol["accessLevel"] in ("public", "open"):
        print("  " + ".".join(symbol["pathComponents"]))
PY
)
  if [ -n "$undocumented" ]; then
    echo "docs.sh: $module: public symbols without a doc comment:" >&2
    echo "$undocumented" >&2
    status=1
  fi
  rm -rf "$out/$module"
  if ! docc convert "Sources/$module/$module.docc" --additional-symbol-graph-dir "$graphs" --fallback-display-name "$module" \
    --fallback-bundle-identifier "org.revue.$module" --output-path "$out/$module" \
    --transform-for-static-hosting --hosting-base-path "$module" --warnings-as-errors; then
    echo "docs.sh: $module: docc convert failed (warnings fail it)" >&2
    status=1
  fi
  rm -rf "$graphs"
  trap - EXIT
done
[ "$status" -eq 0 ] && echo "docs.sh: the reference is in $out/{$(IFS=,; echo "${modules[*]}")}/index.html"
exit "$status"

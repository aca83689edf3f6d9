#!/usr/bin/env bash
# Fuzzes the SDK's parsers and buffer constructors with libFuzzer (docs/fuzzing.md).
#
#   scripts/fuzz.sh [--seconds N] [TARGET ...]     TARGET: sdp config pixel-buffer audio-buffer (all by default)
#
# Builds Fuzz/ with -sanitize=fuzzer,address into .build/fuzz, then runs each target for N seconds
# (20 by default; as many targets at once as the machine has cores) from its seeds (Fuzz/Corpus/TARGET, with Fuzz/Dictionaries/TARGET.dict) and what
# earlier runs on this machine found (.build/fuzz-corpus/TARGET). A crash, an ASan or LSan report,
# a timeout or running out of memory stops the run with a non-zero exit and says which target; the
# input is left in .build/fuzz-findings/TARGET/ (crash-*, leak-*, timeout-*, oom-*). Reproduce it
# with `swift run revue-fuzz TARGET FILE`; once fixed, copy it to Fuzz/Corpus/TARGET/crash-WHAT,
# where FuzzTests replays it on every `swift test`.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="${2:?--seconds takes a number}"; shift 2 ;;
    --seconds=*) seconds="${1#--seconds=}"; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    sdp|config|pixel-buffer|audio-buffer) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown target or option '$1' (targets: sdp config pixel-buffer audio-buffer)" >&2; exit 2 ;;
  esac
done
((${#targets[@]})) || targets=(sdp config pixel-buffer audio-buffer)

build_start=$(date +%s)
mkdir -p .build/fuzz-findings
# The build's log leaves out ld.gold's warnings about ASan's local symbols, which come with every
# -sanitize=fuzzer link.
if ! swift build --product revue-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
  --build-path .build/fuzz >.build/fuzz-findings/build.log 2>&1; then
  grep -v "Cannot export local symbol" .build/fuzz-findings/build.log | tail -40 >&2
  echo "FUZZ FAILED: the fuzz build failed (.build/fuzz-findings/build.log)" >&2
  exit 1
fi
binary=.build/fuzz/debug/revue-fuzz
echo "fuzz build: $(( $(date +%s) - build_start )) s"

# Swift's own crash backtracer reads the crashed thread's stack from another thread, which ASan
# reports as a stack-buffer-underflow; libFuzzer prints the stack instead.
export SWIFT_BACKTRACE=enable=no
export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}"

# Runs one target (in the background: as many at once as the machine has cores, each fuzzer
# being one thread); its exit status goes to .build/fuzz-findings/TARGET.status.
run() {
  local target=$1 corpus=.build/fuzz-corpus/$1 findings=.build/fuzz-findings/$1
  local log=.build/fuzz-findings/$1.log status=0
  mkdir -p "$corpus" "$findings"
  local dictionary=()
  [[ -f Fuzz/Dictionaries/$target.dict ]] && dictionary=(-dict="Fuzz/Dictionaries/$target.dict")
  # Every run has a deadline: libFuzzer's own, and timeout(1) beyond it should the binary hang.
  REVUE_FUZZ_TARGET=$target timeout --kill-after=10 $((seconds + 120)) "$binary" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/" "${dictionary[@]}" "$corpus" "Fuzz/Corpus/$target" >"$log" 2>&1 || status=$?
  echo "$status" >".build/fuzz-findings/$target.status"
}

parallel=$(nproc)
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  echo "fuzz $target: ${seconds} s"
  rm -f ".build/fuzz-findings/$target.status"
  run "$target" &
done
wait

failed=()
for target in "${targets[@]}"; do
  corpus=.build/fuzz-corpus/$target
  findings=.build/fuzz-findings/$target
  log=.build/fuzz-findings/$target.log
  status=$(cat ".build/fuzz-findings/$target.status" 2>/dev/null || echo "no status")
  # A crash on the first input leaves neither line: nothing found is not an error here.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  coverage=$({ grep -o 'cov: [0-9]*' "$log" || true; } | tail -1 | cut -d' ' -f2)
  if [[ "$status" != 0 ]]; then
    echo "FUZZ FAILED: $target (exit $status), input in $findings/, log $log:" >&2
    grep -E -A40 "ERROR: |runtime failure|Fatal error|deadly signal|ALARM|out-of-memory" "$log" | head -80 >&2 || tail -40 "$log" >&2
    failed+=("$target")
  else
    echo "fuzz $target: ${execs:-?} inputs, coverage ${coverage:-?} edges, $(find "$corpus" -type f | wc -l) in corpus, no findings"
  fi
done

if ((${#failed[@]})); then
  echo "FUZZ FAILED: ${failed[*]} (inputs in .build/fuzz-findings/)" >&2
  exit 1
fi

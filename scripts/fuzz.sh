#!/bin/sh
# Runs every libFuzzer target in a build tree for SECONDS each, starting from
# its seed corpus (tests/fuzz-corpus/NAME/) when there is one.  A crash stops
# the run with the fuzzer's report and a non-zero exit.
# Usage: scripts/fuzz.sh BUILD_DIR [SECONDS]
set -eu
build=$(cd "$1" && pwd)
secs=${2:-20}
src=$(cd "$(dirname "$0")/.." && pwd)
found=0
for t in "$build"/fuzz_*; do
  [ -x "$t" ] || continue
  found=1
  name=$(basename "$t")
  work=$(mktemp -d)
  if [ -d "$src/tests/fuzz-corpus/$name" ]; then
    cp -r "$src/tests/fuzz-corpus/$name/." "$work/"
  fi
  echo "fuzz: $name for ${secs}s"
  (cd "$work" && "$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
     -print_final_stats=0 -close_fd_mask=3 "$work" >"$work.log" 2>&1) || {
    echo "fuzz: $name FAILED; its log:"; tail -60 "$work.log"; exit 1; }
  tail -1 "$work.log"
  rm -rf "$work" "$work.log"
done
[ "$found" = 1 ] || { echo "fuzz: no targets in $build" >&2; exit 1; }

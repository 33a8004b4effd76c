#!/bin/sh
# test_train_collector.sh - examples/train under the real collector
# (stprof record): the program's output is unchanged, and the allocations
# the trace holds with train_alloc as the caller of malloc, with their
# frees, give exactly the figures of `train --stats` (count, bytes, peak of
# live bytes, leaks), with and without --plant-bugs and --recompute; the
# markers are recorded.  Exit 77 (skipped) when the build has no collector.
set -eu
: "${STPROF_BUILD:?}" "${STPROF_SRC:?}"
stprof="$STPROF_BUILD/stprof"
train="$STPROF_BUILD/train"
if [ ! -x "$stprof" ] || [ ! -f "$STPROF_BUILD/libstprof.so" ]; then
  echo "skipped: no collector in $STPROF_BUILD"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stprof-test-collector.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for opts in "-i 2 -m 2" "-i 2 -m 2 --plant-bugs" "-i 2 -m 2 --recompute"; do
  # shellcheck disable=SC2086
  "$train" --stats $opts >"$tmp/plain"
  # shellcheck disable=SC2086
  "$stprof" record -q -o "$tmp/t.stp" "$train" --stats $opts >"$tmp/profiled" ||
    fail "train $opts exits non-zero under stprof record"
  cmp -s "$tmp/plain" "$tmp/profiled" || fail "train $opts prints differently under stprof"
  want=$(grep '^train-stats:' "$tmp/profiled")
  got=$(python3 "$STPROF_SRC/tests/examples/trace_alloc_stats.py" "$stprof" "$tmp/t.stp" \
        "$train" train_alloc) || fail "cannot read the trace of train $opts"
  [ "$got" = "$want" ] || fail "train $opts: the program counted
  $want
but the trace holds
  $got"
  marks=$("$stprof" dump -t marker "$tmp/t.stp" | grep -c 'module_enter name="layers.3"' || true)
  # 2 iterations x 2 micro-batches x forward and backward
  [ "$marks" = 8 ] || fail "train $opts: $marks layers.3 markers recorded, expected 8"
done

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "train under the collector: its counts match the trace's"

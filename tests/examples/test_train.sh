#!/bin/sh
# test_train.sh - the bundled example examples/train: options, deterministic
# output, a loss that falls, the allocation counts of --stats (no leak
# without --plant-bugs, exactly the planted one with it, recomputation and
# micro-batches lowering the peak), and well-formed stprof markers (checked
# with mark_recorder.so standing in for the collector).
set -eu
: "${STPROF_BUILD:?}" "${STPROF_SRC:?}"
train="$STPROF_BUILD/train"
recorder="$STPROF_BUILD/libtest_mark_recorder.so"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/stprof-test-train.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# field NAME LINE: the value of NAME=... in a train-stats line
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
stats() { "$train" --stats "$@" | grep '^train-stats:'; }

# --- options
"$train" --help >"$tmp/help" || fail "--help exits non-zero"
grep -q -- '--micro-batches' "$tmp/help" || fail "--help does not list --micro-batches"
for bad in "--layers 0" "--width x" "--batch 10 --micro-batches 3" "--bogus" "--iters" \
           "--lr 2" "extra"; do
  rc=0
  # shellcheck disable=SC2086
  "$train" $bad >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] || fail "train $bad: exit $rc, expected 2"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "train $bad: expected a one-line error, got: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "train $bad: printed to stdout"
done

# --- deterministic output and a falling loss
"$train" >"$tmp/a" || fail "train exits non-zero"
[ "$(grep -c '^iter ' "$tmp/a")" = 20 ] || fail "expected 20 loss lines by default"
"$train" -i 5 >"$tmp/b" || fail "train -i 5 exits non-zero"
"$train" -i 5 >"$tmp/c" || fail "train -i 5 exits non-zero (second run)"
cmp -s "$tmp/b" "$tmp/c" || fail "two runs print different output"
[ "$(grep '^iter ' "$tmp/b")" = "$(grep '^iter ' "$tmp/a" | head -5)" ] ||
  fail "the first 5 iterations differ between -i 5 and -i 20"
"$train" -i 5 --seed 2 >"$tmp/c"
[ "$(grep '^iter ' "$tmp/b")" != "$(grep '^iter ' "$tmp/c")" ] || fail "--seed changes nothing"
first=$(grep '^iter ' "$tmp/a" | head -1 | awk '{print $4}')
last=$(grep '^iter ' "$tmp/a" | tail -1 | awk '{print $4}')
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f / 2) }' ||
  fail "loss does not fall: first $first, last $last"

# --- allocation counts
s=$(stats -i 3)
echo "$s" | grep -Eq '^train-stats: allocs=[0-9]+ frees=[0-9]+ bytes=[0-9]+ peak_live=[0-9]+ leaked=[0-9]+ leaked_bytes=[0-9]+$' ||
  fail "malformed stats line: $s"
[ "$(field leaked "$s")" = 0 ] || fail "leak without --plant-bugs: $s"
[ "$(field leaked_bytes "$s")" = 0 ] || fail "leaked bytes without --plant-bugs: $s"
[ "$(field allocs "$s")" = "$(field frees "$s")" ] || fail "allocs != frees: $s"
[ "$(field peak_live "$s")" -le "$(field bytes "$s")" ] || fail "peak above total bytes: $s"
s2=$(stats -i 2)
per_iter=$(( $(field allocs "$s") - $(field allocs "$s2") ))
[ "$per_iter" = $(( $(field allocs "$s2") - $(field allocs "$(stats -i 1)") )) ] ||
  fail "allocations per iteration are not constant"
[ "$per_iter" -ge 100 ] || fail "only $per_iter allocations per iteration"

b=$(stats -i 3 --plant-bugs)
[ $(( $(field allocs "$b") - $(field frees "$b") )) = "$(field leaked "$b")" ] ||
  fail "allocs - frees != leaked: $b"
# one leaked batch-statistics tensor per micro-batch: 3 iterations x 4
[ "$(field leaked "$b")" = 12 ] || fail "expected 12 leaked blocks with --plant-bugs: $b"
[ "$(field leaked_bytes "$b")" -gt 0 ] || fail "no leaked bytes with --plant-bugs: $b"
[ "$(field peak_live "$b")" -gt "$(field peak_live "$s")" ] ||
  fail "the late free does not raise the peak: $b vs $s"
"$train" -i 3 >"$tmp/plain"
"$train" -i 3 --plant-bugs >"$tmp/bugs"
[ "$(grep '^iter ' "$tmp/plain")" = "$(grep '^iter ' "$tmp/bugs")" ] ||
  fail "--plant-bugs changes the loss"

r=$(stats -i 3 --recompute)
[ "$(field leaked "$r")" = 0 ] || fail "leak with --recompute: $r"
[ "$(field peak_live "$r")" -lt "$(field peak_live "$s")" ] ||
  fail "recomputation does not lower the peak: $r vs $s"
[ "$(field allocs "$r")" -gt "$(field allocs "$s")" ] ||
  fail "recomputation does not allocate more: $r vs $s"
"$train" -i 3 --recompute >"$tmp/recompute"
[ "$(grep '^iter ' "$tmp/plain")" = "$(grep '^iter ' "$tmp/recompute")" ] ||
  fail "--recompute changes the loss"

m1=$(stats -i 2 -m 1)
m8=$(stats -i 2 -m 8)
[ "$(field peak_live "$m8")" -lt "$(field peak_live "$m1")" ] ||
  fail "more micro-batches do not lower the peak: $m8 vs $m1"

# --- markers, through a stand-in for the collector
if [ -f "$recorder" ]; then
  STPROF_MARK_LOG="$tmp/marks" LD_PRELOAD="$recorder" \
    "$train" -i 2 -m 2 -b 8 --recompute >"$tmp/marked" || fail "train under the recorder exits non-zero"
  "$train" -i 2 -m 2 -b 8 --recompute >"$tmp/unmarked"
  cmp -s "$tmp/marked" "$tmp/unmarked" || fail "output differs when markers are recorded"
  python3 "$STPROF_SRC/tests/examples/check_markers.py" "$tmp/marks" --iters 2 --micro-batches 2 \
    --module embed --module layers.0 --module layers.3 --module head \
    --modules-in forward --modules-in backward || fail "markers are not well formed"
else
  fail "$recorder is missing"
fi

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "train: all checks passed"

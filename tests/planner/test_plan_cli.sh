#!/bin/sh
# test_plan_cli.sh - `stprof plan` end to end: a trace written by
# plan_mktrace is planned, verified, shown; the 11 MiniMalloc instances are
# planned with --csv and their outputs verified; bad input and damaged plan
# files give one-line errors and exit 1, never a crash.
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:?}
ST="$B/stprof"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$ST" plan --help | grep -q "usage: stprof plan" || fail "--help"

# a trace: plan (default output name), verify, show
"$B/plan_mktrace" "$T/train.stp" 4 6 3 1 1 1
"$ST" plan "$T/train.stp" >"$T/out.txt" 2>"$T/err.txt" || { cat "$T/err.txt"; fail "plan trace"; }
cat "$T/out.txt"
[ -f "$T/train.plan" ] || fail "default output train.plan"
grep -q "layout / bound = 1.0" "$T/out.txt" || fail "summary ratio"
grep -q "at run time:    peak reserved" "$T/out.txt" || fail "the plan replayed at run time"
grep -q "greedy by size:" "$T/out.txt" || fail "greedy baseline in summary"
grep -q "verified:" "$T/out.txt" || fail "verified line"
"$ST" plan --verify "$T/train.plan" | grep -q "valid" || fail "verify plan"
"$ST" plan --show "$T/train.plan" >"$T/show.txt" || fail "show"
grep -q "entries (" "$T/show.txt" || fail "show entries"
grep -q "varying" "$T/show.txt" || fail "show varying entries"
"$ST" plan -q --varying dynamic -o "$T/dyn.plan" "$T/train.stp" || fail "plan --varying dynamic"
"$ST" plan --show "$T/dyn.plan" | grep -q "dynamic reusable space" || fail "show dynamic groups"
grep -q "forward" "$T/show.txt" || fail "show phases"
"$ST" plan -q -i 1 --align 4096 -o "$T/it1.plan" "$T/train.stp" || fail "plan -i 1"
"$ST" plan -q --verify "$T/it1.plan" || fail "verify it1"
"$ST" plan -q --algo greedy -o "$T/g.plan" "$T/train.stp" || fail "greedy"
"$ST" plan -q --verify "$T/g.plan" || fail "verify greedy"
"$ST" plan -q --window 0:50 -o "$T/w.plan" "$T/train.stp" || fail "window"

# no iteration markers: the detector finds the steady iteration; --no-detect plans the whole trace
"$B/plan_mktrace" "$T/nomark.stp" 6 6 3 0 1 0
"$ST" plan -o "$T/nomark.plan" "$T/nomark.stp" >"$T/nm.txt" || fail "plan without markers"
grep -q "detected from the allocation sequence" "$T/nm.txt" || fail "detected window: $(cat "$T/nm.txt")"
"$ST" plan -q --verify "$T/nomark.plan" || fail "verify detected"
"$ST" plan --no-detect -o "$T/whole.plan" "$T/nomark.stp" | grep -q "the whole trace is one iteration" || fail "--no-detect"
"$ST" plan -q --verify "$T/whole.plan" || fail "verify whole"
# ... and one step unlike the others (iteration 6 makes one more temporary):
# said, without a marker's value to name it by (it printed "iteration -1")
"$B/plan_mktrace" "$T/odd.stp" 12 6 3 0 1 0 6
"$ST" plan -o "$T/odd.plan" "$T/odd.stp" >"$T/odd.txt" || fail "plan with an odd step"
grep -q "^what to change: 1 requests the planned iteration lacks came in 1 of the [0-9]* steady iterations:" \
	"$T/odd.txt" || fail "odd step not said: $(cat "$T/odd.txt")"
grep -q "iteration -" "$T/odd.txt" && fail "odd step named by no marker: $(grep 'iteration -' "$T/odd.txt")"
# the odd step planned (the most bytes live): the other steps lack one of
# its requests, a count that varies, not a size; the note says so (it
# said "a run with longer sequences or larger batches ... record a run that
# reaches the largest", advice for sizes that vary)
"$B/plan_mktrace" "$T/odd2.stp" 6 6 3 0 1 1 2
"$ST" plan -o "$T/odd2.plan" "$T/odd2.stp" >"$T/odd2.txt" || fail "plan with an odd step, markers"
grep -q "1 is not made in every iteration" "$T/odd2.txt" &&
	grep -q "^note:           the number of requests varies from step to step, their sizes do not" "$T/odd2.txt" ||
	fail "counts vary: $(cat "$T/odd2.txt")"
grep -q "longer sequences" "$T/odd2.txt" && fail "counts vary: advice for sizes: $(grep -A2 '^note' "$T/odd2.txt")"

# the MiniMalloc instances (shared/ sits beside the checkout, or one further up for a worktree)
mm=""
for d in "$S/../shared" "$S/../../shared"; do
  [ -d "$d/benchmarks/minimalloc" ] && { mm="$d/benchmarks/minimalloc"; break; }
done
# the pool of a layout CSV: the highest offset + size
pool() { awk -F, 'NR > 1 && $5 + $4 > m { m = $5 + $4 } END { print m + 0 }' "$1"; }
ninst=0
for f in "$mm"/*.csv; do
  [ -f "$f" ] || continue
  ninst=$((ninst + 1))
  n=$(basename "$f" .csv)
  "$ST" plan -q --budget 0.3 --csv "$f" -o "$T/$n.out.csv" || fail "csv $n"
  head -1 "$T/$n.out.csv" | grep -q "^id,lower,upper,size,offset$" || fail "csv header $n"
  "$ST" plan -q --verify "$T/$n.out.csv" || fail "csv verify $n"
  # the plan written is the best layout found: never larger than greedy's
  "$ST" plan -q --algo greedy --csv "$f" -o "$T/$n.g.csv" || fail "csv greedy $n"
  [ "$(pool "$T/$n.out.csv")" -le "$(pool "$T/$n.g.csv")" ] ||
    fail "$n: the plan written ($(pool "$T/$n.out.csv")) is larger than greedy's ($(pool "$T/$n.g.csv"))"
done
echo "MiniMalloc instances planned and verified: $ninst"
# the search: instance C reaches its bound (exact search, optimal) within the budget.
# The search's quality is what these check, not the machine's load: their budgets
# are CPU seconds of the planning (STPROF_PLAN_CLOCK=cpu), which a loaded machine
# (the suite under ASan beside other jobs) stretches in wall time but does not cut.
if [ -f "$mm/C.1048576.csv" ]; then
  STPROF_PLAN_CLOCK=cpu "$ST" plan --budget 5 --csv "$mm/C.1048576.csv" -o "$T/c.out.csv" >"$T/c.txt" || fail "csv C with the search"
  grep -q "^result: *exact search; optimal" "$T/c.txt" || fail "C result: $(cat "$T/c.txt")"
  grep -q "^pool: .*(1039360 bytes)" "$T/c.txt" || fail "C pool: $(cat "$T/c.txt")"
  "$ST" plan -q --verify "$T/c.out.csv" || fail "C verify"
fi
# A, I and K meet the best known capacity (their bound) in well under a
# second here (341, 13,101 and 2,751 nodes): the support rule, the
# least-slack section and the time-reversed restarts at work.
# Under ASan+UBSan (a Debug build, about 30x slower a node) I's first try at
# its bound runs out of its share (a quarter CPU second: 7,296 of the 13,101
# nodes) and the tries after it do not get back there in 10 s (measured:
# 1,078,272 bytes, 2.83% over); there the search's layout is checked, not its
# quality, which is the optimized build's to show
for n in A I K; do
  [ -f "$mm/$n.1048576.csv" ] || continue
  STPROF_PLAN_CLOCK=cpu "$ST" plan --budget 10 --csv "$mm/$n.1048576.csv" -o "$T/$n.s.csv" >"$T/$n.s.txt" || fail "csv $n with the search"
  "$ST" plan -q --verify "$T/$n.s.csv" || fail "$n verify"
  if [ "$n" = I ] && [ "${STPROF_SANITIZE:-0}" = 1 ]; then
    grep -q "^result: *exact search" "$T/$n.s.txt" || fail "$n result: $(cat "$T/$n.s.txt")"
    # (greedy's layout of every instance was written above)
    [ "$(pool "$T/$n.s.csv")" -le "$(pool "$T/$n.1048576.g.csv")" ] || fail "$n: the search's layout is larger than greedy's"
    continue
  fi
  grep -q "^result: *exact search; optimal" "$T/$n.s.txt" || fail "$n result: $(cat "$T/$n.s.txt")"
  grep -q "^pool: .*(1048576 bytes)" "$T/$n.s.txt" || fail "$n pool: $(cat "$T/$n.s.txt")"
done
"$ST" plan --help | grep -q -- "--budget SECONDS" || fail "--budget not in --help"
set +e
"$ST" plan --budget soon "$T/train.stp" 2>"$T/eb"; rc=$?
set -e
[ $rc = 2 ] || fail "--budget soon exit $rc"
grep -q "budget wants seconds" "$T/eb" || fail "--budget message: $(cat "$T/eb")"

# bad input: one line, exit 1
printf 'id,lower,upper,size\n0,9,3,1\n' >"$T/bad.csv"
set +e
"$ST" plan --csv "$T/bad.csv" -o "$T/x.csv" 2>"$T/e1"; rc=$?
set -e
[ $rc = 1 ] || fail "bad csv exit $rc"
grep -q "bad.csv:2: upper" "$T/e1" || fail "bad csv message: $(cat "$T/e1")"
printf 'id,lower,upper,size,offset\n0,0,10,8,0\n1,5,15,8,4\n' >"$T/overlap.csv"
set +e
"$ST" plan --verify "$T/overlap.csv" 2>"$T/e2"; rc=$?
set -e
[ $rc = 1 ] || fail "overlap verify exit $rc"
grep -q "INVALID: overlap at tick 5" "$T/e2" || fail "overlap message: $(cat "$T/e2")"
cp "$T/train.plan" "$T/bad.plan"
printf 'X' | dd of="$T/bad.plan" bs=1 seek=300 conv=notrunc 2>/dev/null
set +e
"$ST" plan --show "$T/bad.plan" 2>"$T/e3"; rc=$?
set -e
[ $rc = 1 ] || fail "damaged plan exit $rc"
grep -q "checksum mismatch" "$T/e3" || fail "damaged plan message: $(cat "$T/e3")"
[ "$(wc -l <"$T/e3")" = 1 ] || fail "one-line error"
set +e
"$ST" plan --frobnicate 2>/dev/null; rc=$?
set -e
[ $rc = 2 ] || fail "usage exit $rc"
echo "test_plan_cli: all passed"

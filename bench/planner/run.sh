#!/bin/sh
# bench/planner/run.sh - planner figures (make bench): time, pool/lower bound
# and memory per request at 10^4, 10^5, 3x10^5 and 10^6 requests for
# STAlloc-in-C (with and without the improvement step) and greedy-by-size;
# then the MiniMalloc challenging instances against their best known
# capacities with the search ($BENCH_BUDGET s each, default 10), and a family
# generated from them by perturbing sizes ($BENCH_SEEDS seeds, default 3,
# $BENCH_PERTURB_BUDGET s each, default 5); the generated family of large
# MoE / pipeline instances ($BENCH_LARGE_SEEDS seeds, default 2, of about
# $BENCH_LARGE_REQS requests, default 30000, $BENCH_LARGE_BUDGET s each,
# default 10); and real compiler traces against their lower bound when a
# folder of them is found ($BENCH_IDEALLOC, or shared/benchmarks/idealloc
# beside the checkout: idealloc's benchmarks/iopddl/*.csv and
# benchmarks/somas_tensors/*.csv, github.com/cappadokes/idealloc), with
# 10 s and with the default 2 s, and `stprof plan --csv` on each as users run
# it (its summary's greedy baseline line and the whole command's CPU time).  Timings are of one core; the machine may
# be shared: STPROF_PLAN_CLOCK=cpu makes every budget CPU seconds of the
# planning process, so a busy machine buys the same work (the tables then
# say so).
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:?}
echo "-- generated Megatron-like traces (one pipeline stage, 1 iteration)"
"$B/bench_planner" gen ${BENCH_SIZES:-10000 100000 300000 1000000}
mm=""
for d in "$S/../shared" "$S/../../shared"; do
  [ -d "$d/benchmarks/minimalloc" ] && { mm="$d/benchmarks/minimalloc"; break; }
done
if [ -n "$mm" ]; then
  echo "-- MiniMalloc challenging instances: pool and % above the best known capacity"
  "$B/bench_planner" csv "$mm"/*.csv
  echo "-- the same with the default budget of 2 s"
  BENCH_BUDGET=2 "$B/bench_planner" csv "$mm"/*.csv
  echo "-- the same with sizes perturbed per seed (a generated family)"
  BENCH_BUDGET=${BENCH_PERTURB_BUDGET:-5} "$B/bench_planner" perturb ${BENCH_SEEDS:-3} "$mm"/*.csv
else
  echo "-- MiniMalloc instances not found (shared/benchmarks/minimalloc): skipped"
fi
echo "-- generated large MoE / pipeline instances against their lower bound"
BENCH_BUDGET=${BENCH_LARGE_BUDGET:-10} "$B/bench_planner" large ${BENCH_LARGE_SEEDS:-2} ${BENCH_LARGE_REQS:-30000}
id=${BENCH_IDEALLOC:-}
for d in "$S/../shared" "$S/../../shared"; do
  [ -z "$id" ] && [ -d "$d/benchmarks/idealloc" ] && id="$d/benchmarks/idealloc"
done
if [ -n "$id" ] && ls "$id"/*.csv >/dev/null 2>&1; then
  echo "-- real compiler traces (idealloc's benchmarks) against their lower bound"
  BENCH_BUDGET=10 "$B/bench_planner" bound "$id"/*.csv
  echo "-- the same with the default budget of 2 s"
  BENCH_BUDGET=2 "$B/bench_planner" bound "$id"/*.csv
  echo "-- stprof plan --csv end to end (default budget): the greedy baseline's share"
  t=$(mktemp -d)
  for f in "$id"/*.csv; do
    /usr/bin/time -f "%U %S %e" -o "$t/time" "$B/stprof" plan --csv "$f" -o "$t/out.csv" >"$t/sum" 2>&1 || {
      echo "$(basename "$f"): stprof plan failed"; cat "$t/sum"; continue; }
    plan=$(sed -n 's/^planned in: *\([0-9.]*\) s.*/\1/p' "$t/sum")
    greedy=$(sed -n 's/^greedy by size: *//p' "$t/sum" | sed 's/ (half.*//')
    ratio=$(sed -n 's/.*pool \/ bound = \([0-9.]*\).*/\1/p' "$t/sum")
    read -r u s e <"$t/time"
    printf '%-16s pool/bound %s; planned in %s s; whole command %.2f CPU s, %.2f wall s; greedy by size: %s\n' \
      "$(basename "$f")" "$ratio" "$plan" "$(awk "BEGIN{print $u + $s}")" "$e" "$greedy"
  done
  rm -rf "$t"
else
  echo "-- idealloc's traces not found (\$BENCH_IDEALLOC, shared/benchmarks/idealloc): skipped"
fi

#!/bin/sh
# bench/planner/run.sh - planner figures (make bench): time, pool/lower bound
# and memory per request at 10^4, 10^5, 3x10^5 and 10^6 requests for
# STAlloc-in-C (with and without the improvement step) and greedy-by-size;
# then the MiniMalloc challenging instances against their best known
# capacities with the search ($BENCH_BUDGET s each, default 10), and a family
# generated from them by perturbing sizes ($BENCH_SEEDS seeds, default 3,
# $BENCH_PERTURB_BUDGET s each, default 5).  Timings are of one core; the machine may be shared.
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
  echo "-- the same with sizes perturbed per seed (a generated family)"
  BENCH_BUDGET=${BENCH_PERTURB_BUDGET:-5} "$B/bench_planner" perturb ${BENCH_SEEDS:-3} "$mm"/*.csv
else
  echo "-- MiniMalloc instances not found (shared/benchmarks/minimalloc): skipped"
fi

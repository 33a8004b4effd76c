#!/bin/sh
# bench/allocator/run.sh - libstalloc figures (make bench): ns per planned
# allocation+free against glibc, jemalloc and mimalloc (Debian's
# libjemalloc2 and libmimalloc2.0, installed by scripts/deps.sh bench) on
# the same generated training stream, best of 5; the pool's use.
set -eu
B=${STPROF_BUILD:?}
n=${BENCH_STALLOC_ITERS:-2000}
"$B/bench_stalloc" "$n"
je=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -f "$je" ]; then
  LD_PRELOAD=$je "$B/bench_stalloc" "$n" jemalloc | tail -n 1
else
  echo "jemalloc   not installed ($je)"
fi
# inference latency against jemalloc, mimalloc and tcmalloc (infer.sh)
"$(dirname "$0")/infer.sh"

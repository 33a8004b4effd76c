#!/bin/sh
# test_stalloc_cuda.sh - libstalloc's CUDA entry points on a test double of
# the CUDA runtime (fake_cudart.c: host memory), as no GPU is here: a
# device plan made for a generated schedule, replayed through cudaMalloc /
# cudaFree and PyTorch's pluggable-allocator calls.  Without libstalloc
# every call reaches the runtime; with it and the plan, only the pool's
# reservation does (every planned request is served from the pool), and
# the blocks' stamps stay intact.  tests/gpu/run.sh checks the real path.
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/stalloc_cuda_prog" "$T/dev.plan" make
"$B/stprof" plan --show "$T/dev.plan" -n 0 >/dev/null
native=$("$B/stalloc_cuda_prog" "$T/dev.plan" run)
echo "without libstalloc: $native"
case "$native" in *"failures 0, torch entry points absent"*) ;; *) echo "FAIL: native run"; exit 1 ;; esac
calls=$(echo "$native" | sed -n 's/runtime calls \([0-9]*\).*/\1/p')
[ "$calls" -gt 1000 ] || { echo "FAIL: $calls runtime calls"; exit 1; }
planned=$(STALLOC_PLAN="$T/dev.plan" STALLOC_STATS="$T/stats" LD_PRELOAD="$B/libstalloc.so" \
	"$B/stalloc_cuda_prog" "$T/dev.plan" run)
echo "with libstalloc:    $planned"
head -5 "$T/stats"
case "$planned" in *"runtime calls 1, failures 0, torch entry points found"*) ;;
	*) echo "FAIL: with the plan, only the pool should reach the runtime"; exit 1 ;; esac
fb=$(tr ' ' '\n' <"$T/stats" | sed -n 's/^fallbacks=//p')
[ "$fb" = 0 ] || { echo "FAIL: $fb fallbacks"; exit 1; }
echo "test_stalloc_cuda: passed"

#!/bin/sh
# check_10_stalloc_cuda.sh - libstalloc on the real CUDA runtime: the schedule of
# tests/allocator/cuda_prog.c (a device plan made here) replayed through
# cudaMalloc/cudaFree and the pluggable-allocator entry points; every planned
# request comes from the pool.
# Run by tests/gpu/run.sh, which sets S (source), B (build), T (scratch dir),
# PY (python) and CUDA (toolkit).  Prints what it measured; exits non-zero on
# the first failure.
set -eu
echo "  libstalloc on the CUDA runtime"
cc -O2 -I"$S/include" -I"$S/tests/allocator" -o "$T/cuda_prog" "$S/tests/allocator/cuda_prog.c" \
	-DREAL_CUDA "$B/planner/libstp_planner.a" "$B/trace/libstp_trace.a" \
	-L"$CUDA/lib64" -lcudart -Wl,-rpath,"$CUDA/lib64" -ldl -lm
"$T/cuda_prog" "$T/dev.plan" make
STALLOC_PLAN="$T/dev.plan" STALLOC_STATS="$T/stats" LD_PRELOAD="$B/libstalloc.so" "$T/cuda_prog" "$T/dev.plan" run
head -5 "$T/stats"
tr ' ' '\n' <"$T/stats" | grep -q '^fallbacks=0$' || { echo "FAIL: fallbacks on the GPU"; exit 1; }


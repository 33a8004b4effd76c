#!/bin/sh
# tests/gpu/jax_diag.sh - not a check (run.sh runs check_*.sh only): where a
# JAX program dies under stprof on a GPU.  On an H200 (2026-11-28, jax and
# jaxlib 0.11.2, CUDA 13 plugin) check_75 ended in "Segmentation fault"
# after jax.devices() had worked; no lease was left to find out more.  This
# runs tests/jax/jax_train.py (3 steps, Python's faulthandler on) natively,
# recorded, and recorded with one part of stprof off at a time (CUPTI,
# the Python shim, CUPTI's activity records, native call paths), each for
# 25 s at most, and prints one line each: status, last output, the tail of
# stderr.  About a minute in all.  Run from the repository root with B (a
# build) and T (a scratch directory) set, as tests/gpu/run.sh sets them.
J="${JAXPY:-${PY:-python3}} -X faulthandler tests/jax/jax_train.py --steps 3 --width 4096 --eval 2 --live --check"
run() { name=$1; shift; timeout 25 "$@" >$T/o 2>$T/e; rc=$?
	echo "$name: rc=$rc out=$(tail -1 $T/o) err=$(grep -v '^ *$' $T/e | grep -v 'Warning\|warn(' | tail -12 | cut -c1-160 | tr '\n' '|')"; }
run native $J
run rec $B/stprof record -q -o $T/a.stp -- $J
run cuda0 env STPROF_CUDA=0 $B/stprof record -q -o $T/b.stp -- $J
run shim0 env STPROF_SHIM=0 $B/stprof record -q -o $T/c.stp -- $J
run act0 env STPROF_CUDA_ACTIVITY=0 $B/stprof record -q -o $T/d.stp -- $J
run depth0 $B/stprof record -d 0 -q -o $T/e.stp -- $J

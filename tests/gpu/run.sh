#!/bin/sh
# tests/gpu/run.sh - the checks that need a GPU, run end to end by hand on a
# GPU machine (not by ctest: CI has none).  Builds stprof, then runs every
# tests/gpu/check_*.sh in name order (each one owns a capability: libstalloc
# on CUDA, the CUPTI collector, PyTorch on CUDA, Compute Sanitizer ...), with
# S (source), B (build), T (a scratch dir of its own), PY and CUDA set.
# Prints what each measured; exits non-zero when one fails (after running
# the others).  ONLY=PATTERN runs the checks whose name contains PATTERN.
# As in ctest, every report, export and one-shot run checks its figures
# against each other (STPROF_SELF_CHECK=1: exit 70 and the violations when
# they do not add up; docs/report.md, "Self-check").
set -eu
S=$(cd "$(dirname "$0")/../.." && pwd)
B=${STPROF_BUILD:-$S/build-gpu}
PY=${PYTHON:-python3}
CUDA=${CUDA_HOME:-/usr/local/cuda}
export S B PY CUDA
export STPROF_SELF_CHECK=1
if [ "${STPROF_NO_BUILD:-0}" != 1 ]; then
	cmake -S "$S" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$B" -j "$(nproc)" >/dev/null
fi
nvidia-smi -L || true
failed=""
for c in "$S"/tests/gpu/check_*.sh; do
	case "$(basename "$c")" in *"${ONLY:-}"*) ;; *) continue ;; esac
	T=$(mktemp -d)
	export T
	echo "== $(basename "$c")"
	if sh "$c"; then echo "-- passed"; else echo "-- FAILED"; failed="$failed $(basename "$c")"; fi
	rm -rf "$T"
done
[ -z "$failed" ] || { echo "tests/gpu/run.sh: failed:$failed"; exit 1; }
echo "tests/gpu/run.sh: passed"

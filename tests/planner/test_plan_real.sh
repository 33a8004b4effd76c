#!/bin/sh
# test_plan_real.sh - plans real traces: the bundled example program and a
# PyTorch CPU training run (examples/torch_transformer.py) recorded by
# `stprof record`.  The pool must be within 1% of the lower bound.  Skipped (77) while
# the collector or the programs are not there.  Every plan is verified and
# its pool/bound ratio printed.
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:?}
ST="$B/stprof"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$ST" record --help >/dev/null 2>&1 || { echo "skip: stprof record is not built yet"; exit 77; }
ran=0
plan_one() { # trace
  "$ST" plan -o "$T/p.plan" "$1" >"$T/out.txt" || { cat "$T/out.txt"; echo "FAIL: plan $1"; exit 1; }
  cat "$T/out.txt"
  "$ST" plan -q --verify "$T/p.plan" || { echo "FAIL: verify $1"; exit 1; }
  ratio=$(sed -n 's/.*pool \/ bound = \([0-9.]*\).*/\1/p' "$T/out.txt")
  awk -v r="$ratio" 'BEGIN { exit !(r <= 1.01) }' || { echo "FAIL: $1: pool/bound $ratio > 1.01"; exit 1; }
  ran=$((ran + 1))
}
if [ -x "$B/train" ] || [ -x "$B/examples/train" ]; then
  ex="$B/train"; [ -x "$ex" ] || ex="$B/examples/train"
  "$ST" record -o "$T/ex.stp" "$ex" >/dev/null 2>&1 && plan_one "$T/ex.stp"
fi
PY=${STPROF_PYTHON:-}
if [ -n "$PY" ] && [ -f "$S/examples/torch_transformer.py" ] && "$PY" -c "import torch" 2>/dev/null; then
  # allocations of 512 bytes and more: the tensors, not the interpreter's small objects
  "$ST" record -q -m 512 -o "$T/py.stp" "$PY" "$S/examples/torch_transformer.py" --iters 4 >/dev/null 2>&1 &&
    plan_one "$T/py.stp"
fi
[ $ran -gt 0 ] || { echo "skip: nothing could be recorded"; exit 77; }
echo "test_plan_real: planned $ran real traces"

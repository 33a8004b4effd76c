#!/bin/sh
# make demo's script (scripts/demo.sh) on the build tree: the bundled
# example recorded, reported and planned, and what to run next, PyTorch
# included: with a Python that has torch, the command; without, how to get
# it (the quick start shows `stprof python3 train.py`).
set -eu
: "${STPROF_BUILD:?run through ctest}" "${STPROF_SRC:?run through ctest}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
DEMO_OUT="$T/a" STPROF_DEMO_PYTHON=/bin/false sh "$STPROF_SRC/scripts/demo.sh" "$STPROF_BUILD" >"$T/out" 2>&1 ||
  { cat "$T/out"; fail "demo.sh"; }
[ -s "$T/a/train.plan" ] && [ -s "$T/a/train.html" ] || fail "demo wrote no plan or report: $(ls "$T/a")"
grep -q "install Debian's python3-torch" "$T/out" || fail "no word on getting PyTorch: $(tail -5 "$T/out")"
PY=${STPROF_PYTHON:-/usr/bin/python3}
if "$PY" -c 'import torch' 2>/dev/null; then
  DEMO_OUT="$T/b" STPROF_DEMO_PYTHON="$PY" sh "$STPROF_SRC/scripts/demo.sh" "$STPROF_BUILD" >"$T/out" 2>&1 || fail "demo.sh"
  grep -q "stprof $PY .*examples/torch_transformer.py" "$T/out" || fail "no PyTorch command: $(tail -5 "$T/out")"
fi
echo ok

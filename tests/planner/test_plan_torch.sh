#!/bin/sh
# test_plan_torch.sh - plans a real PyTorch CPU training run: torch_train.py
# (a 4-layer transformer, 2 micro-batches, Adam) runs under heaptrack's
# preload library, which logs every malloc/free with its address;
# plan_heaptrack2stp turns the log into a .stp trace with iteration and
# phase markers; `stprof plan` plans the last iteration, the plan is
# verified, and the pool must be within 1% of the lower bound.  Skipped (77)
# without python3-torch or heaptrack.  (When `stprof record` records PyTorch
# itself, test_plan_real.sh covers the same with the real collector.)
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:?}
PY=${STPROF_PYTHON:-/usr/bin/python3}
HT=/usr/lib/heaptrack/libheaptrack_preload.so
[ -f "$HT" ] || { echo "skip: heaptrack's preload library is not installed"; exit 77; }
"$PY" -c "import torch" 2>/dev/null || { echo "skip: no torch for $PY"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
LD_PRELOAD=$HT DUMP_HEAPTRACK_OUTPUT="$T/raw.txt" "$PY" "$S/tests/planner/torch_train.py" 3 2
"$B/plan_heaptrack2stp" "$T/raw.txt" "$T/torch.stp" 512
"$B/stprof" plan -o "$T/torch.plan" "$T/torch.stp" >"$T/out.txt"
cat "$T/out.txt"
grep -q "iteration 2 of 3 complete ones" "$T/out.txt" || { echo "FAIL: iteration window"; exit 1; }
"$B/stprof" plan -q --verify "$T/torch.plan" || { echo "FAIL: verify"; exit 1; }
ratio=$(sed -n 's/.*pool \/ bound = \([0-9.]*\).*/\1/p' "$T/out.txt")
awk -v r="$ratio" 'BEGIN { exit !(r <= 1.01) }' || { echo "FAIL: pool/bound $ratio > 1.01"; exit 1; }
"$B/stprof" plan -n 5 --show "$T/torch.plan" | grep -q "backward" || { echo "FAIL: show phases"; exit 1; }
echo "test_plan_torch: pool/bound $ratio"

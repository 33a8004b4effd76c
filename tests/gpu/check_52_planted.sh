#!/bin/sh
# check_52_planted.sh - DrGPUM's patterns on a real GPU under
# `stprof record --accesses=exact`, planted where we know them:
#   1. tests/sanitizer/planted.cu: one object per pattern (early, late,
#      unused, dead write, temporary idleness, redundant, overallocation,
#      leak, structured access, non-uniform frequency), each allocated on a
#      line marked PLANT:<pattern>: the report's findings are exactly those
#      ten, each at its line, nothing else;
#   2. tests/python/planted_train.py on CUDA: a training loop with nine
#      planted tensors (the same but redundant: PyTorch's caching allocator
#      reuses blocks already): the nine at their lines, nothing else; the
#      loop's structure (weights across iterations, activations saved for
#      the backward, cuBLAS's workspace) kept apart.
# Prints each finding with its rank, distance and place on the timeline
# (tests/python/planted_check.py), and what the backend did.  Run by
# tests/gpu/run.sh (S, B, T, PY, CUDA set); exits non-zero on a failure.
set -eu
echo "  planted patterns (--accesses=exact)"
"$CUDA/bin/nvcc" -g -O2 -o "$T/planted" "$S/tests/sanitizer/planted.cu"
"$T/planted" >"$T/pn.txt"
"$B/stprof" record --accesses=exact -o "$T/p.stp" -- "$T/planted" >"$T/pr.txt" 2>"$T/pe.txt"
# CUPTI cannot subscribe beside the Compute Sanitizer: stderr says what is lost
grep '^stprof: CUDA' "$T/pe.txt" | sed 's/^/  /' || true
cmp -s "$T/pn.txt" "$T/pr.txt" || { echo "FAIL: planted's output changed under stprof"; exit 1; }
"$B/stprof" report -f json --top 200 --frames 16 -o "$T/p.json" "$T/p.stp"
fail=0
echo "  planted.cu:"
"$PY" "$S/tests/python/planted_check.py" "$T/p.json" "$S/tests/sanitizer/planted.cu" early-allocation \
	late-deallocation unused-allocation dead-write temporary-idleness redundant-allocation overallocation \
	memory-leak structured-access non-uniform-frequency || { fail=1; "$B/stprof" report --top 12 "$T/p.stp" | sed -n '/^Findings/,/^Allocator/p' | head -60; }

if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	P="$S/tests/python/planted_train.py"
	"$PY" "$P" cuda 5 >"$T/tn.txt"
	t0=$(date +%s.%N)
	timeout 300 "$B/stprof" record --accesses=exact -q -o "$T/t.stp" -- "$PY" "$P" cuda 5 >"$T/tr.txt" ||
		{ echo "FAIL: planted_train.py did not finish under --accesses=exact"; exit 1; }
	t1=$(date +%s.%N)
	echo "  planted_train.py (cuda, 5 iterations, $(echo "$t1 $t0" | awk '{printf "%.1f", $1 - $2}')s recorded):"
	cmp -s "$T/tn.txt" "$T/tr.txt" || echo "  (losses differ: $(cat "$T/tn.txt") / $(cat "$T/tr.txt"))"
	"$B/stprof" report -f json --top 200 --frames 16 -o "$T/t.json" "$T/t.stp"
	"$PY" "$S/tests/python/planted_check.py" "$T/t.json" "$P" early-allocation temporary-idleness \
		unused-allocation dead-write overallocation late-deallocation memory-leak structured-access \
		non-uniform-frequency ||
		{ fail=1; "$B/stprof" report --top 12 "$T/t.stp" | sed -n '/^Findings/,/^Allocator/p' | head -60; }
	"$B/stprof" dump "$T/t.stp" | grep -o 'name="stprof.sanitizer_[a-z_]*" value=-\?[0-9]*' |
		sed 's/name="stprof.sanitizer_/ /; s/" value=/=/' | tr -d '\n' | sed 's/^/  backend:/'
	echo
else
	echo "  (no CUDA PyTorch for $PY: planted_train.py skipped)"
fi
[ "$fail" = 0 ] || { echo "FAIL: planted findings"; exit 1; }

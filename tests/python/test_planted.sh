#!/bin/bash
# planted_train.py (a training loop with one tensor per DrGPUM pattern on a
# marked line) on the CPU with op-level accesses (stprof record --accesses):
# the five patterns ops can show (early allocation, temporary idleness,
# unused allocation, late deallocation, leak) are the report's findings,
# each at its line, and nothing else is; the training loop's own structure
# (weights kept across iterations, activations saved for the backward,
# gradients waiting for the step, the caching of tensors) is kept apart;
# the same over two micro-batches per step.
# Dead writes and overallocation need kernels' exact accesses
# (tests/gpu/check_52_planted.sh runs the same program on a GPU).
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1
cd "$T"
P="$STPROF_SRC/tests/python/planted_train.py"
"$PY" "$P" cpu 5 >native.txt || fail "planted_train.py failed by itself"
"$STPROF" record --accesses -q -o p.stp -- "$PY" "$P" cpu 5 >rec.txt || fail "record"
cmp -s native.txt rec.txt || fail "output differs under stprof: $(cat native.txt) / $(cat rec.txt)"
"$STPROF" report -f json --top 200 -o p.json p.stp || fail "report"
"$PY" "$STPROF_SRC/tests/python/planted_check.py" p.json "$P" early-allocation temporary-idleness \
	unused-allocation late-deallocation memory-leak || fail "planted findings"
# the loop's structure, apart: the weights' idleness across iterations and
# phases, tensors of the caching allocator
"$PY" - p.json <<'PY' || fail "expected findings"
import json, sys
d = json.load(open(sys.argv[1]))
why = {f['expected'] for f in d['expected']}
for w in ('across-iterations', 'phases', 'caching-allocator'):
    assert w in why, (w, sorted(why))
assert d['logical_unit'] == 'ops', d['logical_unit']
PY
# the text report says the same, in ops, with the timeline's words
"$STPROF" report --top 10 p.stp >p.txt || fail "text report"
grep -q "Temporary idleness: 5 objects, 20.0 MiB.*distance [0-9]* ops" p.txt || fail "$(grep -A3 Findings p.txt)"
grep -q "in forward of iteration" p.txt || fail "no phase words: $(grep -- '->' p.txt | head -5)"
grep -q "expected, not counted as findings" p.txt || fail "no expected section"
# the same loop over 2 micro-batches per step (gradients accumulated): the
# same five at their lines, nothing else
"$STPROF" record --accesses -q -o m.stp -- "$PY" "$P" cpu 3 2 >m.txt || fail "record, micro-batches"
"$STPROF" report -f json --top 200 -o m.json m.stp || fail "report, micro-batches"
"$PY" "$STPROF_SRC/tests/python/planted_check.py" m.json "$P" early-allocation temporary-idleness \
	unused-allocation late-deallocation memory-leak >m.check || fail "micro-batches: $(cat m.check)"
echo ok

#!/bin/bash
# A training loop with no optimizer step the shim can see (parameters
# updated by hand here; a compiled optimizer step, whose hooks TorchDynamo
# traces away, is the same: tests/python/test_torch_compile.sh) still gets
# iterations from markers once 32 backwards have run without a step: the
# root forward after a backward ends the iteration.  So its steady
# iterations are folded (at most 1 KiB of trace each, the 300-step trace
# against a 100-step one), a step unlike the others is written in full,
# the output is the native one, and the report reads them as markers'.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
P="$STPROF_SRC/tests/python/fold_loop.py"
cd "$T"
"$STPROF" record -q -o d.stp -- "$PY" "$P" 300 200 manual >d.out || fail "recorded run failed"
expect_eq "output under stprof" "$(cat d.out)" "$("$PY" "$P" 300 200 manual)"
"$STPROF" report d.stp >d.txt || fail "report failed"
# iteration 0: steps 0-31 (32 backwards before forwards end iterations);
# iteration k: step 31 + k; the last step's iteration is never ended
grep -q "^Iterations: 268 from markers" d.txt || fail "iterations: $(grep -A2 '^Iterations' d.txt)"
grep -q "every event of iterations 0-1, 169, 266-267" d.txt || fail "folding: $(grep -A2 folded d.txt)"
grep -q "phases    forward backward (markers)" d.txt || fail "phases: $(grep phases d.txt)"
"$STPROF" record -q -o s100.stp -- "$PY" "$P" 100 -1 manual >/dev/null
"$STPROF" record -q -o s300.stp -- "$PY" "$P" 300 -1 manual >/dev/null
a=$(stat -c %s s100.stp) b=$(stat -c %s s300.stp)
per=$(((b - a) / 200))
echo "  by hand: 100 steps $a bytes, 300 steps $b bytes: $per bytes per steady iteration"
[ "$per" -le 1024 ] || fail "a steady iteration adds $per bytes (at most 1 KiB)"
# with an optimizer nothing changes: the steps end the iterations
"$STPROF" record -q -o o.stp -- "$PY" "$P" 100 >/dev/null
"$STPROF" report o.stp | grep -q "^Iterations: 100 from markers" || fail "with an optimizer: $("$STPROF" report o.stp | grep '^Iterations')"
echo ok

#!/bin/bash
# A program that catches a refused allocation and goes on
# (tests/python/refused_batch.py):
# 1. every tensor after the refusal is recorded: c10::alloc_cpu throws
#    through the collector's interposed frame (collector/torch/torch_cpu.c),
#    whose busy mark is now a cleanup; before, the thread stayed busy and
#    "count" recorded 12 of its 40 tensors, none after step 5.
# 2. a batch-size finder (batch 512 refused, 256, 128, then 64 trains):
#    every module's entry has its exit, and the modules after the one that
#    raised keep their rows, as when the finder starts at 64.  On PyTorch
#    1.x no forward hook runs when a forward raises: the shim closes the
#    modules it left at the next forward (torch_markers.py, close_stale);
#    before, module "1" read 3 allocations instead of 10 and "0" had the
#    rest of the run.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
cd "$T"
P="$STPROF_SRC/tests/python/refused_batch.py"

# 1.
"$STPROF" record -q -o "$T/c.stp" -- "$PY" "$P" count >/dev/null || fail "record count"
"$STPROF" report "$T/c.stp" >"$T/c.txt" || fail "report count"
got=$(sed -n '/^Memory (cpu tensors)/,/^  peak/s/^  objects   \([0-9,]*\) allocated.*/\1/p' "$T/c.txt")
expect_eq "cpu tensors recorded around a caught refusal" "$got" "40"

# 2.
rows() { # TRACE: bytes-by-module rows of the modules after "0"
	"$STPROF" report "$1" | sed -n '/^Bytes by module/,/^$/p' | grep -E '  (1|1\.fc|2)$' | sort -k4
}
for b in 512 64; do
	"$STPROF" record -q -o "$T/f$b.stp" -- "$PY" "$P" find $b >"$T/f$b.out" || fail "record find $b"
done
grep -q "batch 512 refused" "$T/f512.out" || fail "the finder was not refused: $(cat "$T/f512.out")"
enters=$("$STPROF" dump -t marker "$T/f512.stp" | grep -c 'kind=module_enter')
exits=$("$STPROF" dump -t marker "$T/f512.stp" | grep -c 'kind=module_exit')
expect_eq "module exits for entries after refusals" "$exits" "$enters"
expect_eq "module rows after refusals" "$(rows "$T/f512.stp")" "$(rows "$T/f64.stp")"
echo ok

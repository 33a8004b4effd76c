#!/bin/bash
# Slow leaks and late growth on real PyTorch (CPU), 1,000 steps of an MLP
# (slow_leak.py): one 4 KiB tensor kept every 10 steps, and one every step
# from step 700, are each a memory-leak finding at the line that keeps it,
# with the iterations it grows over; a window of the last 300 steps (a
# deque that frees as many as it keeps) and a clean loop have none.  The
# kept tensors sit in a Python list the interpreter empties at exit: the
# leak is judged on the loop's survivors, not on never-freed objects.
# The traces are the default's: steady iterations folded (FOLD events keep
# every allocation that outlives its iteration).
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers (the detector's C tests cover the rule)"
export OMP_NUM_THREADS=1
P="$STPROF_SRC/tests/python/slow_leak.py"
cd "$T"
leaks() { grep -c "Memory leak:" "$1" || true; }

"$STPROF" record -q -o "$T/e.stp" -- "$PY" "$P" 1000 every10 >"$T/e.out"
expect_eq "every10 output" "$(cat "$T/e.out")" 100
# recorded by default: sampled heap, steady iterations folded (the
# iterations that keep a tensor repeat each other and are folded too)
"$STPROF" info "$T/e.stp" | grep -q "^folded: " || fail "every10: no iteration folded"
"$STPROF" report "$T/e.stp" >"$T/e.txt"
expect_eq "every10 leak findings" "$(leaks "$T/e.txt")" 1
grep -A1 "1. Memory leak: 99 objects, 396 KiB" "$T/e.txt" | grep -q "at slow_leak.py:25 in keep" \
	|| fail "every10: not at its line: $(grep -A2 'Memory leak' "$T/e.txt")"
grep -q "It grows from iteration 10 to 990: kept in 99 iterations, about every 10 iterations" "$T/e.txt" \
	|| fail "every10: growth: $(grep -- '->' "$T/e.txt" | head -2)"
"$STPROF" report --format json "$T/e.stp" >"$T/e.json"
grep -q '"leak_iterations":{"count":99,"first":10,"last":990,"freed_after_loop":99}' "$T/e.json" \
	|| fail "every10: json leak_iterations"

"$STPROF" record -q -o "$T/l.stp" -- "$PY" "$P" 1000 late >/dev/null
"$STPROF" info "$T/l.stp" | grep -q "^folded: " || fail "late: no iteration folded"
"$STPROF" report "$T/l.stp" >"$T/l.txt"
expect_eq "late leak findings" "$(leaks "$T/l.txt")" 1
grep -A1 "1. Memory leak: 299 objects, 1.17 MiB" "$T/l.txt" | grep -q "at slow_leak.py:27 in keep" \
	|| fail "late: not at its line: $(grep -A2 'Memory leak' "$T/l.txt")"
grep -q "It grows from iteration 701 to 999: kept in 299 iterations, 4 KiB per iteration" "$T/l.txt" \
	|| fail "late: growth: $(grep -- '->' "$T/l.txt" | head -2)"

for m in window none; do
	"$STPROF" record -q -o "$T/$m.stp" -- "$PY" "$P" 1000 $m >/dev/null
	"$STPROF" report "$T/$m.stp" >"$T/$m.txt"
	expect_eq "$m leak findings" "$(leaks "$T/$m.txt")" 0
done
echo ok

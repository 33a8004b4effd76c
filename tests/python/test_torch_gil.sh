#!/bin/bash
# A tensor's Python frames never wait for the GIL (collector/core/pyframes.c):
# gil_rng.py, whose main thread allocates under PyTorch's generator lock
# while another Python thread holds the GIL and waits for that lock, ends
# under stprof as it does natively (it deadlocked when the collector took the
# GIL there), with the same output; a tensor made while the program had one
# Python thread still carries its Python line, and the other thread's (made
# with the GIL held) carry theirs.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
export OMP_NUM_THREADS=1
S="$STPROF_SRC/tests/python/gil_rng.py"
cd "$T"
want=$("$PY" "$S" 2>&1)
got=$(timeout 120 "$STPROF" record -q -o "$T/g.stp" -- "$PY" "$S" 2>&1)
rc=$?
[ $rc = 124 ] && fail "gil_rng.py did not end under stprof in 120 s (GIL deadlock)"
expect_eq "exit status" "$rc" 0
expect_eq "output under stprof" "$got" "$want"
"$STPROF" report -n 1000 "$T/g.stp" >"$T/r.txt" 2>&1 || fail "report failed"
grep -q "at gil_rng.py:10 in <module>" "$T/r.txt" || fail "the single-threaded tensor lost its Python line: $(grep -m3 gil_rng "$T/r.txt")"
grep -q "at gil_rng.py:16 in side" "$T/r.txt" || fail "the GIL holder's tensors lost their Python line"
echo ok

#!/bin/bash
# torch.compile under stprof (PyTorch 2.x; skipped with PyTorch 1.x, as
# Debian's python3-torch is: run it with STPROF_PYTHON=a Python with
# PyTorch 2).  TorchDynamo traces the global module and optimizer hooks
# into its graphs; the shim's hooks return at once while it traces
# (torch.compiler.is_compiling), so the program breaks its graphs where it
# does without stprof and compiles the same graphs (counts and loss equal
# to a native run), for a compiled model and for a compiled optimizer step.
# A compiled model keeps the markers' iterations (its step is eager); a
# compiled step leaves one iteration begun and none ended, and the report
# takes the iterations from the allocations' period instead, until 32
# backwards have run without a step: then forwards end the iterations.  PyTorch's
# warning about global module hooks at a compiled model's calls is printed
# as without stprof: not for the shim's hooks, still for the program's own.
# torch.export (strict) exports as without stprof.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch, sys; sys.exit(0 if hasattr(torch, "compile") else 1)' 2>/dev/null ||
	skip "no torch.compile for $PY (PyTorch 1.x)"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1
P="$STPROF_SRC/tests/python/compiled_train.py"
cd "$T"
warnings() { grep -o "UserWarning: [^;]*" "$1" | sort | uniq -c; }
for mode in model step hooked; do
	native=$("$PY" "$P" 12 $mode 2>"$T/$mode.native.err") || fail "$mode: native run failed"
	got=$("$STPROF" record -q -o "$T/$mode.stp" -- "$PY" "$P" 12 $mode 2>"$T/$mode.err") ||
		fail "$mode: recorded run failed: $(tail -3 "$T/$mode.err")"
	expect_eq "$mode: graphs and loss as without stprof" "$got" "$native"
	expect_eq "$mode: warnings as without stprof" "$(warnings "$T/$mode.err")" "$(warnings "$T/$mode.native.err")"
	"$STPROF" report "$T/$mode.stp" >"$T/$mode.txt" || fail "$mode: report failed"
done
grep -q "^Iterations: 12 from markers" "$T/model.txt" ||
	fail "model: iterations: $(grep -A1 '^Iterations' "$T/model.txt")"
grep -q "^Iterations: [0-9]* detected from the allocations" "$T/step.txt" ||
	fail "step: iterations: $(grep -A1 '^Iterations' "$T/step.txt")"
grep -q "one iteration begun by a marker, none ended; detected a period" "$T/step.txt" ||
	fail "step: method: $(grep -A1 '^Iterations' "$T/step.txt")"
grep -q "at compiled_train.py:[0-9]* in " "$T/model.txt" || fail "model: no row at the script's lines"
# a longer run of the compiled step: after 32 backwards with no step seen,
# forwards end the iterations (tests/python/test_stepless.sh), and the
# steady ones are folded
"$STPROF" record -q -o "$T/long.stp" -- "$PY" "$P" 60 step >/dev/null 2>&1 || fail "step 60: failed"
"$STPROF" report "$T/long.stp" >"$T/long.txt" || fail "step 60: report failed"
grep -q "^Iterations: 28 from markers" "$T/long.txt" || fail "step 60: $(grep -A1 '^Iterations' "$T/long.txt")"
grep -q "^  folded    2[0-9] steady iterations" "$T/long.txt" || fail "step 60: $(grep -A1 'folded' "$T/long.txt")"
grep -q "UserWarning: Using .torch.compile(module). when there are global hooks" "$T/hooked.err" ||
	fail "hooked: the program's own global hook no longer warned: $(cat "$T/hooked.err")"
# torch.export, strict too (which traced the module's __call__ while the
# shim's global hooks were there, and raised), then training with markers
E="$STPROF_SRC/tests/python/export_model.py"
native=$("$PY" "$E" 2>/dev/null) || fail "export: native run failed"
got=$("$STPROF" record -q -o "$T/export.stp" -- "$PY" "$E" 2>"$T/export.err") ||
	fail "export: recorded run failed: $(grep -m1 -A3 '^torch._dynamo.exc' "$T/export.err")"
expect_eq "export: graphs and loss as without stprof" "$got" "$native"
"$STPROF" report "$T/export.stp" | grep -q "^Iterations: 4 from markers" ||
	fail "export: the markers after the export: $("$STPROF" report "$T/export.stp" | grep -A1 '^Iterations')"
echo ok

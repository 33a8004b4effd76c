#!/bin/bash
# The Python shim on real PyTorch (Debian python3-torch, CPU), with no change
# to the scripts: a small known model (known_model.py) gives the exact
# iterations, micro-batches, phase sequence and module names (bytes by
# module with each module's backward); the tensor
# space's live bytes equal PyTorch's own count at chosen points; the report
# shows the user's Python line first; under activation checkpointing the
# recomputed forwards are marked and the classes are sane; a user's own
# sitecustomize still runs; stprof.step() marks loops without an optimizer;
# without markers no start-up loop is taken for iterations.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
# each report reads ~2.4 million events: too slow under the sanitizers (the
# detector's C tests cover it there)
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1
M="$STPROF_SRC/tests/python/known_model.py"
cd "$T"

# 1. the program's output is the same
want=$("$PY" "$M" 2>&1)
got=$("$STPROF" record -q -o "$T/k.stp" -- "$PY" "$M" 2>&1)
expect_eq "output under stprof" "$got" "$want"

# 2. iterations, micro-batches, phases: exactly these, in this order
"$STPROF" dump -t marker "$T/k.stp" >"$T/m.txt"
seq=$(grep -E 'kind=(iteration|phase)_' "$T/m.txt" | sed 's/.* kind=\([a-z_]*\) name="\([^"]*\)" value=\(-*[0-9]*\).*/\1:\2:\3/' | tr '\n' ' ')
one() { echo -n "iteration_begin::$1 "; for mb in 0 1; do
	echo -n "phase_begin:forward:$mb phase_end:forward:$mb phase_begin:backward:$mb phase_end:backward:$mb "; done
	echo -n "phase_begin:optimizer:0 phase_end:optimizer:0 iteration_end::$1 "; }
# (the iteration after the last step begins and never ends: not counted)
expect_eq "iteration and phase markers" "$seq" "$(one 0)$(one 1)$(one 2)iteration_begin::3 "

# 3. module names, qualified, each entered once per forward (3 x 2 + 1 eval)
names=$(sed -n 's/.* kind=module_enter name="\([^"]*\)".*/\1/p' "$T/m.txt" | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')
expect_eq "module names" "$names" "body=7 body.0=7 body.1=7 body.2=7 head=7 "
exits=$(grep -c 'kind=module_exit' "$T/m.txt")
expect_eq "module exits" "$exits" 35

# 4. tensor bytes = PyTorch's own count (8 points: start, before and after
#    each step, after an inference forward)
"$STPROF" record -q -o "$T/c.stp" -- "$PY" "$M" --check >/dev/null 2>&1 || fail "record --check"
"$STPROF" dump "$T/c.stp" >"$T/c.txt"
python3 "$STPROF_SRC/tests/python/check_bytes.py" "$T/c.txt" || fail "tensor bytes differ from PyTorch's count"
[ "$(grep -c MISMATCH <(python3 "$STPROF_SRC/tests/python/check_bytes.py" "$T/c.txt"))" = 0 ] || fail mismatch
points=$(python3 "$STPROF_SRC/tests/python/check_bytes.py" "$T/c.txt" | wc -l)
expect_eq "points compared" "$points" 8

# 5. the report: the markers' 3 iterations, the tensor space, user lines first
"$STPROF" report --top 40 "$T/k.stp" >"$T/r.txt"
grep -q "^Iterations: 3 from markers" "$T/r.txt" || fail "iterations: $(grep Iterations "$T/r.txt")"
grep -q "^  phases    forward backward forward\[1\] backward\[1\] optimizer (markers)" "$T/r.txt" || fail "phases"
grep -q "^Top call sites by bytes live at the peak (cpu tensors)" "$T/r.txt" || fail "not the tensor space"
first=$(grep -m1 '^      at ' "$T/r.txt")
case "$first" in *"at known_model.py:"*" in "*) ;; *) fail "first site is not a user line: $first" ;; esac
grep -q "at known_model.py:26 in Net.__init__" "$T/r.txt" || fail "no site at the model's first layer"
# bytes by module, from the module markers
grep -q "^Bytes by module, allocated while it ran or by its backward (cpu tensors)" "$T/r.txt" || fail "no bytes by module"
grep -qE "^ +[0-9.]+ [KM]iB +[0-9,]+  body.0$" "$T/r.txt" || fail "module body.0 not in bytes by module"
# ... each with its backward's tensors: body.0's forward runs 7 times (one
# output each), its backward 6 (a weight and a bias gradient each): 19,
# where it was 7 and the backward's tensors were all "(no module)"
"$STPROF" report --format json "$T/k.stp" | python3 -c '
import json, sys
m = {x["name"]: x["allocs"] for x in json.load(sys.stdin)["modules"]}
assert m.get("body.0", 0) >= 19 and m.get("head", 0) >= 19, m
# the optimizer step (SGD with momentum: its buffers, its temporaries) a row of its own
assert m.get("(optimizer)", 0) >= 6, m' || fail "bytes by module: the backward not charged to its modules, or no (optimizer) row"
# the host heap stays one option away
"$STPROF" report --space host "$T/k.stp" | grep -q "^Top call sites by bytes live at the peak (host)" || fail "--space host"

# 6. activation checkpointing: recomputes marked inside each backward
"$STPROF" record -q -o "$T/cp.stp" -- "$PY" "$M" --checkpoint >/dev/null 2>&1 || fail "record --checkpoint"
"$STPROF" dump -t marker "$T/cp.stp" >"$T/cpm.txt"
rc=$(grep -c 'kind=phase_begin name="recompute"' "$T/cpm.txt")
expect_eq "recompute phases" "$rc" 6
nested=$(grep -E 'name="(backward|recompute)"' "$T/cpm.txt" | grep -E 'phase_(begin|end)' | sed 's/.*kind=phase_\([a-z]*\) name="\([a-z]*\)".*/\1\2/' | tr '\n' ' ')
expect_eq "recompute inside backward" "$nested" "$(for i in 1 2 3 4 5 6; do echo -n 'beginbackward beginrecompute endrecompute endbackward '; done)"
"$STPROF" report --top 40 "$T/cp.stp" >"$T/cpr.txt"
class_of() { awk -v w="$1" '/^ +[0-9]+ /{c=$NF} index($0, "at " w) {print c; exit}' "$T/cpr.txt"; }
expect_eq "parameters' class" "$(class_of 'known_model.py:26 in Net.__init__')" persistent
expect_eq "optimizer state's class" "$(class_of 'known_model.py:74 in main')" persistent
act=$(class_of 'known_model.py:33 in Net.forward')
case "$act" in scoped|transient) ;; *) fail "activations' class: '$act'" ;; esac

# 7. the user's own sitecustomize still runs
mkdir "$T/site"
printf 'import os\nopen(os.environ["MARK_FILE"], "w").write("ran")\n' >"$T/site/sitecustomize.py"
PYTHONPATH="$T/site" MARK_FILE="$T/ran" "$STPROF" record -q -o "$T/s.stp" -- "$PY" "$M" >/dev/null 2>&1 || fail "record with a user sitecustomize"
expect_eq "user sitecustomize" "$(cat "$T/ran" 2>/dev/null)" ran
expect_eq "markers with a user sitecustomize" "$("$STPROF" dump -t marker "$T/s.stp" | grep -c iteration_end)" 3

# 8. stprof.step() for a loop without an optimizer
printf 'import torch, stprof\nfor i in range(4):\n    x = torch.ones(1000) * i\n    stprof.step()\n' >"$T/noopt.py"
"$STPROF" record -q -o "$T/n.stp" -- "$PY" "$T/noopt.py" || fail "record noopt"
expect_eq "stprof.step() iterations" "$("$STPROF" dump -t marker "$T/n.stp" | grep -c iteration_end)" 4
# 9. without markers (shim off), the host heap of `import torch` and a few
#    ops: its repeating start-up loops are no credible iteration, and the
#    report says so and names the options instead of a confidence (every
#    heap allocation: --full; a sampled heap has no start-up loops to see)
printf 'import torch\nx = torch.randn(500, 500)\ny = x @ x\nprint(float(y.sum()) != 0)\n' >"$T/plain.py"
STPROF_SHIM=0 "$STPROF" record --full -q -o "$T/p.stp" -- "$PY" "$T/plain.py" >/dev/null || fail "record plain"
expect_eq "no markers with the shim off" "$("$STPROF" dump -t marker "$T/p.stp" | grep -vc kind=annotation)" 0
it=$("$STPROF" report --space host "$T/p.stp" | grep '^Iterations')
case "$it" in *"no credible iteration"*"stprof.step()"*"--iterations none"*) ;; *) fail "host start-up: $it" ;; esac
# the way to classes named for a Python user, not only C's markers
"$STPROF" report --space host "$T/p.stp" | grep -q "^  Classes need iterations: in Python each optimizer step marks one" ||
  fail "classes' hint: $("$STPROF" report --space host "$T/p.stp" | grep -A1 '^  Classes need')"
# 10. a loop in the shapes users write (iter_shapes.py): an initial loss
#     printed before the loop and evaluations under model.eval() with grad
#     enabled are no micro-batches; the first iteration's backward is
#     micro-batch 0; `del out, loss` after opt.step() leaves those tensors
#     re-made every iteration, not persistent; under checkpointing the
#     phases line names the recompute phases
S="$STPROF_SRC/tests/python/iter_shapes.py"
"$STPROF" record -q -o "$T/is.stp" -- "$PY" "$S" >/dev/null 2>&1 || fail "record iter_shapes"
"$STPROF" dump -t marker "$T/is.stp" >"$T/ism.txt"
seq=$(grep -E 'kind=(iteration|phase)_' "$T/ism.txt" | sed 's/.* kind=\([a-z_]*\) name="\([^"]*\)" value=\(-*[0-9]*\).*/\1:\2:\3/' | tr '\n' ' ')
for it in 0 1 2 3; do
  expect_eq "iter_shapes: iteration $it's phases" "$(echo "$seq" | sed "s/.*iteration_begin::$it \(.*\)iteration_end::$it .*/\1/")" \
    "$(for mb in 0 1; do echo -n "phase_begin:forward:$mb phase_end:forward:$mb phase_begin:backward:$mb phase_end:backward:$mb "; done; echo -n "phase_begin:optimizer:0 phase_end:optimizer:0 ")"
done
"$STPROF" report --top 40 "$T/is.stp" >"$T/isr.txt"
grep -q "^  phases    forward backward forward\[1\] backward\[1\] optimizer (markers)" "$T/isr.txt" ||
  fail "iter_shapes phases: $(grep '^  phases' "$T/isr.txt")"
# the output (allocated at the head, line 36), the loss (49) and the
# gradients (50, zero_grad(set_to_none=True) after the step): no object of
# theirs is persistent
"$STPROF" report -f json --all --no-models "$T/is.stp" -o "$T/is.json"
python3 - "$T/is.json" <<'PY' || fail "tensors re-made every iteration classed persistent"
import json, sys
d = json.load(open(sys.argv[1]))
seen = set()
for s in d['sites']:
    f = s['frames'][0] if s['frames'] else {}
    if (f.get('file') or '').endswith('iter_shapes.py') and f.get('line') in (36, 49, 50):
        seen.add(f['line'])
        assert s['classes']['persistent']['objects'] == 0, (f['text'], s['classes']['persistent'])
assert seen == {36, 49, 50}, seen
PY
"$STPROF" record -q -o "$T/isc.stp" -- "$PY" "$S" --checkpoint >/dev/null 2>&1 || fail "record iter_shapes --checkpoint"
"$STPROF" report "$T/isc.stp" | grep -q "^  phases    forward backward (+recompute) forward\[1\] backward\[1\] (+recompute) optimizer (markers)" ||
  fail "phases under checkpointing: $("$STPROF" report "$T/isc.stp" | grep '^  phases')"

# 5. the hooks' markers go through the collector's builtin (pymark.c): it
#    takes a str, bytes or None name; arguments of other kinds record
#    nothing and raise nothing; the program's output is its own
cat >"$T/fm.py" <<'PY'
import stprof, stprof.torch_markers as tm, torch
f = stprof.fast_mark()
assert type(f).__name__ == "builtin_function_or_method" and tm.mark is f, (f, tm.mark)
f(7, "fm.str", 5); f(7, b"fm.bytes", 6); f(7, None, 7)
f(7); f("x", 1, 2); f(999, "fm.big", 1); f(7, 3.5, "fm")
print("fm done")
PY
got=$("$STPROF" record -q -o "$T/fm.stp" -- "$PY" "$T/fm.py" 2>&1)
expect_eq "fast_mark output" "$got" "fm done"
fm=$("$STPROF" dump -t marker "$T/fm.stp" | sed -n 's/.* kind=annotation name="\([^"]*\)" value=\([0-9]*\).*/\1=\2/p' | grep -v '^stprof\.' | tr '\n' ' ')
expect_eq "fast_mark markers" "$fm" "fm.str=5 fm.bytes=6 =7 =0 "
echo ok

#!/bin/bash
# Module names where a program has no single root model
# (collector/torch/python/stprof/torch_markers.py, name_top):
# 1. a GAN (gan_loop.py: G and D, globals): each model's modules carry its
#    variable's name, "G.0" and "D.0" (a loss, with no parameters, keeps
#    its class's name); before, the first model's read "0", "1", "2" and
#    the second's only their class ("Linear", "LeakyReLU"), so the
#    bytes-by-module table could not tell the two apart.
# 2. a module whose training_step runs its parts (PyTorch Lightning's
#    LightningModule; model_names.py lit): named within it, "encoder.0"
#    and "head", not "0".
# 3. a teacher run under no_grad and its student (locals of a function):
#    "teacher.0", "student.0"; the student, trained, is the root whose
#    forward is the phase "forward" (before, the teacher, run first, was
#    the root and iterations had no forward phase).
# 4. a model and an EMA copy of it evaluated every 10 steps: "model.0" and
#    "ema.0".  A program with one model keeps its names ("body.0":
#    test_torch_shim.sh).
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
cd "$T"
names() { # TRACE: the modules entered, sorted, once each
	"$STPROF" dump -t marker "$1" | sed -n 's/.* kind=module_enter name="\([^"]*\)".*/\1/p' | sort -u | tr '\n' ' '
}
phases() { # TRACE: the report's phases line
	"$STPROF" report "$1" | sed -n 's/^  phases    //p'
}

# 1.
"$STPROF" record -q -o "$T/g.stp" -- "$PY" "$STPROF_SRC/tests/python/gan_loop.py" 20 >/dev/null || fail "record gan"
expect_eq "gan module names" "$(names "$T/g.stp")" "BCEWithLogitsLoss D D.0 D.1 D.2 G.0 G.1 G.2 "
"$STPROF" report "$T/g.stp" >"$T/g.txt"
grep -qE '^ +[0-9.]+ [KM]iB +[0-9,]+  D\.0$' "$T/g.txt" || fail "no D.0 in bytes by module: $(sed -n '/^Bytes by module/,/^$/p' "$T/g.txt")"
grep -q 'backward of D\.2: ' "$T/g.txt" || fail "no backward site of D.2"

# 2.
M="$STPROF_SRC/tests/python/model_names.py"
"$STPROF" record -q -o "$T/l.stp" -- "$PY" "$M" lit >/dev/null || fail "record lit"
expect_eq "training_step module names" "$(names "$T/l.stp")" "encoder.0 encoder.1 encoder.2 head "

# 3.
"$STPROF" record -q -o "$T/d.stp" -- "$PY" "$M" distill >/dev/null || fail "record distill"
expect_eq "distillation module names" "$(names "$T/d.stp")" \
	"student.0 student.1 student.2 teacher teacher.0 teacher.1 teacher.2 "
expect_eq "distillation phases" "$(phases "$T/d.stp")" "forward backward optimizer (markers)"

# 4.
"$STPROF" record -q -o "$T/e.stp" -- "$PY" "$M" ema >/dev/null || fail "record ema"
expect_eq "ema module names" "$(names "$T/e.stp")" "ema ema.0 ema.1 ema.2 model.0 model.1 model.2 "
# the EMA copy first evaluated at step 259 of 300, long after the loop went
# lean (module hooks off): it was run hook-free and never named (and the
# test above failed so when a loaded machine made step 9 lean already)
"$STPROF" record -q -o "$T/e2.stp" -- "$PY" "$M" ema 300 250 >/dev/null || fail "record ema, evaluated late"
expect_eq "ema module names, evaluated late" "$(names "$T/e2.stp")" "ema ema.0 ema.1 ema.2 model.0 model.1 model.2 "
echo ok

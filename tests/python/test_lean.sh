#!/bin/bash
# Lean iterations (collector/core/fold.c and collector/torch/torch_lean.c;
# docs/record.md, "Lean iterations") on real PyTorch (CPU):
# 1. fold_loop.py, 1,000 steps, step 500 making a 1 MiB temporary: the
#    output is the native one; the recording goes lean (annotation
#    "stprof.lean" 1) once iterations repeat, and not with STPROF_LEAN=0;
#    the same iterations are folded either way; the tensor space's totals
#    and peak equal a --full recording's; iteration 999 (lean, written in
#    full) makes the same tensors with the same call paths in the same
#    order as iteration 1 (full detail), and the same iteration and phase
#    markers but no module markers (the shim takes its module hooks away
#    in lean iterations); the report's call sites and modules (tensors)
#    are those of STPROF_LEAN=0 (the modules of a lean iteration's
#    tensors come from the full iterations);
#    the deviating step's temporary is at its line (fold_loop.py's scratch).
# 2. torch_eval_every.py (an evaluation every 20 steps): the plan is the
#    one STPROF_LEAN=0 gives (its requests, persistent and static), and so
#    are the report's bytes by module (an evaluation in a lean iteration
#    brings the module hooks back).
# 3. slow_leak.py late (a 4 KiB tensor kept every step from step 700): the
#    growth sends the recording back to full detail (annotation 0).
# 4. known_model.py under activation checkpointing, 300 steps of 2
#    micro-batches: lean iterations keep the module hooks (the recompute
#    phases need them): the last iteration, lean and written in full, has
#    its module markers and both recompute phases, and iterations fold.
# 5. varlen_loop.py (another sequence length each step: the same tensors
#    at the same lines with other sizes) goes lean too, by shape: its
#    output is the native one; the tensor totals are those of --full; the
#    report's call sites and modules those of STPROF_LEAN=0; the last
#    iteration (lean) makes its tensors with iteration 1's call paths, in
#    the same order, at other sizes.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
cd "$T"
json_tensors() { # TRACE: the tensor space's totals
	"$STPROF" report --format json "$1" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["spaces"]:
    if s.get("tensors"):
        print(" ".join("%s=%s" % (k, s[k]) for k in ("allocs", "frees", "bytes_allocated", "peak_bytes", "live_bytes_end")))'
}
lean_marks() { "$STPROF" dump -t marker "$1" | sed -n 's/.*name="stprof.lean" value=\([01]\)$/\1/p' | tr '\n' ' '; }
folded() { "$STPROF" dump -t fold "$1" | sed 's/.* iteration=\([0-9]*\) like=.*/\1/' | tr '\n' ' '; }
# TRACE ITER: the tensors iteration ITER made, "size stack" a line, in order
tensors_of() {
	"$STPROF" dump -s -t alloc -t marker "$1" | awk -v it="$2" '
		/kind=iteration_begin/ { on = ($NF == "value=" it) }
		on && / alloc / && / pool=1/ { s = ""; z = ""
			for (i = 5; i <= NF; i++) { if ($i ~ /^size=/) z = $i; if ($i ~ /^stack=/) s = $i }
			print z, s }'
}

# 1.
P="$STPROF_SRC/tests/python/fold_loop.py"
"$STPROF" record -q -o l.stp -- "$PY" "$P" 1000 500 >l.out
STPROF_LEAN=0 "$STPROF" record -q -o d.stp -- "$PY" "$P" 1000 500 >d.out
"$STPROF" record --full -q -o f.stp -- "$PY" "$P" 1000 500 >/dev/null
expect_eq "fold_loop: output" "$(cat l.out)" "$("$PY" "$P" 1000 500)"
case "$(lean_marks l.stp)" in 1\ *1\ |1\ ) ;; *) fail "fold_loop: annotations '$(lean_marks l.stp)'" ;; esac
expect_eq "fold_loop: no lean annotation with STPROF_LEAN=0" "$(lean_marks d.stp)" ""
expect_eq "fold_loop: folded iterations, lean vs not" "$(folded l.stp)" "$(folded d.stp)"
expect_eq "fold_loop: tensor totals vs --full" "$(json_tensors l.stp)" "$(json_tensors f.stp)"
tensors_of l.stp 1 >t1
tensors_of l.stp 999 >t999
[ -s t1 ] && grep -q stack= t1 || fail "fold_loop: no tensors with call paths in iteration 1"
cmp -s t1 t999 || fail "fold_loop: iteration 999 (lean) unlike iteration 1: $(diff t1 t999 | head -5)"
markers_of() { # TRACE ITER: its markers' kinds, names and values
	"$STPROF" dump -t marker "$1" | awk -v it="$2" '/kind=iteration_begin/ { on = ($NF == "value=" it) }
		on && !/kind=annotation/ { $1 = $2 = $3 = ""; print }'
}
markers_of l.stp 1 | sed 's/value=1$/value=I/' >m1
markers_of l.stp 999 | sed 's/value=999$/value=I/' >m999
grep -q module_enter m1 || fail "fold_loop: no module marker in iteration 1"
grep -q module_ m999 && fail "fold_loop: module markers in iteration 999 (lean)"
grep -q phase_begin m999 || fail "fold_loop: no phase marker in iteration 999 (lean)"
grep -v module_ m1 >m1p
cmp -s m1p m999 || fail "fold_loop: iteration 999's markers unlike iteration 1's: $(diff m1p m999 | head -5)"
"$STPROF" report l.stp >l.txt
"$STPROF" report d.stp >d.txt
sections() { sed -n '/^Top call sites/,/^$/p; /^Bytes by module/,/^$/p' "$1"; }
[ -n "$(sections l.txt)" ] || fail "fold_loop: no call sites in the report"
expect_eq "fold_loop: call sites and modules, lean vs not" "$(sections l.txt)" "$(sections d.txt)"
line=$(grep -n "scratch = torch.ones" "$STPROF_SRC/tests/python/fold_loop.py" | cut -d: -f1)
grep -q "fold_loop.py:$line" l.txt || fail "fold_loop: the deviating step's line not in the report"
grep -q "every event of iterations 0-1, 500, 998-999" l.txt || fail "fold_loop: report: $(grep -A2 folded l.txt)"

# 2.
V="$STPROF_SRC/tests/allocator/torch_eval_every.py"
"$STPROF" record -q -o e.stp -- "$PY" "$V" 100 >/dev/null
STPROF_LEAN=0 "$STPROF" record -q -o e0.stp -- "$PY" "$V" 100 >/dev/null
case "$(lean_marks e.stp)" in 1\ *) ;; *) fail "eval_every: annotations '$(lean_marks e.stp)'" ;; esac
"$STPROF" plan -o e.plan e.stp >e.sum
"$STPROF" plan -o e0.plan e0.stp >e0.sum
expect_eq "eval_every: plan requests, lean vs not" "$(grep '^requests:' e.sum)" "$(grep '^requests:' e0.sum)"
modules() { "$STPROF" report "$1" | sed -n '/^Bytes by module/,/^$/p'; }
expect_eq "eval_every: bytes by module, lean vs not" "$(modules e.stp)" "$(modules e0.stp)"

# 3.
S="$STPROF_SRC/tests/python/slow_leak.py"
"$STPROF" record -q -o s.stp -- "$PY" "$S" 1000 late >/dev/null
case "$(lean_marks s.stp)" in *1\ 0\ *) ;; *) fail "late: no return to full detail: '$(lean_marks s.stp)'" ;; esac

# 4.
K="$STPROF_SRC/tests/python/known_model.py"
"$STPROF" record -q -o k.stp -- "$PY" "$K" --checkpoint --iters=300 >/dev/null
case "$(lean_marks k.stp)" in 1\ *) ;; *) fail "checkpoint: annotations '$(lean_marks k.stp)'" ;; esac
[ -n "$(folded k.stp)" ] || fail "checkpoint: no iteration folded"
markers_of k.stp 299 >k299
expect_eq "checkpoint: recompute phases in iteration 299 (lean)" "$(grep -c 'phase_begin name="recompute"' k299)" 2
grep -q module_enter k299 || fail "checkpoint: no module markers in iteration 299 (lean)"

# 5.
W="$STPROF_SRC/tests/python/varlen_loop.py"
"$STPROF" record -q -o v.stp -- "$PY" "$W" 300 >v.out
STPROF_LEAN=0 "$STPROF" record -q -o v0.stp -- "$PY" "$W" 300 >/dev/null
"$STPROF" record --full -q -o vf.stp -- "$PY" "$W" 300 >/dev/null
expect_eq "varlen: output" "$(cat v.out)" "$("$PY" "$W" 300)"
case "$(lean_marks v.stp)" in 1\ *) ;; *) fail "varlen: annotations '$(lean_marks v.stp)'" ;; esac
expect_eq "varlen: tensor totals vs --full" "$(json_tensors v.stp)" "$(json_tensors vf.stp)"
"$STPROF" report v.stp >v.txt
"$STPROF" report v0.stp >v0.txt
expect_eq "varlen: call sites and modules, lean vs not" "$(sections v.txt)" "$(sections v0.txt)"
tensors_of v.stp 1 >w1
tensors_of v.stp 299 >w299
[ -s w1 ] && grep -q stack= w1 || fail "varlen: no tensors with call paths in iteration 1"
expect_eq "varlen: iteration 299's call paths (lean) vs iteration 1's" \
	"$(cut -d' ' -f2 w299)" "$(cut -d' ' -f2 w1)"
cmp -s w1 w299 && fail "varlen: iterations 1 and 299 made the same sizes"
echo ok

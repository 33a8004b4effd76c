#!/bin/bash
# Several optimizers (tests/python/gan_loop.py: a GAN, each training step a
# discriminator step then a generator step): one iteration is one training
# step, not one optimizer step (collector/torch/python/stprof/
# torch_markers.py, step_end).
# 1. 300 steps: 300 iterations (the first step is one too: its first
#    optimizer step does not end it while the second optimizer made has not
#    stepped; before, each ended one, and those two halves made the plan
#    of a fixed-shape GAN read "shapes vary"); a steady iteration has
#    both steps' phases (forward, backward, optimizer, backward[1],
#    optimizer[1]); steady iterations fold; what lives across the steps'
#    halves (the generator's output) is not persistent: the persistent
#    class holds the weights, the optimizers' state and the data (42-46
#    objects), where splitting each step in two made it 6,028; the output
#    is the native one; its plan's replay counts the iterations written
#    in full and does not say that shapes vary.
# 2. The generator's optimizer replaced at step 150 (a second stage): the
#    shim learns the cycle again (in that step, whose first optimizer step
#    waits for the new one: no more iterations than steps) and iterations fold
#    on both sides.  The generator trained from step 50 on only (its
#    optimizer made then): the new optimizer joins the cycle as its last,
#    so iteration 100 (step 100; recorded --full) has both steps' phases in
#    order, and step 50, which makes it, is one iteration with them too (it
#    was cut in two at the discriminator's step: 301 iterations).
# 3. An optimizer step given a closure that runs the forward and backward
#    (fold_loop.py closure; LBFGS, PyTorch Lightning's loop): its phase
#    begins when the closure's backward ends, so an iteration reads forward,
#    backward, optimizer and the step's own work (the update) is in it.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
P="$STPROF_SRC/tests/python/gan_loop.py"
cd "$T"
summary() { # TRACE [ITERATION]: iterations, folded, persistent objects, that iteration's phases (2)
	"$STPROF" report --format json "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
t = r["timeline"]
ph = " ".join("%s/%d" % (p["name"], p["micro_batch"]) for p in t["phases"] if p["iteration"] == int(sys.argv[1]))
print(len(t["iterations"]), (t.get("folded") or {}).get("iterations", 0), r["classes"]["persistent"]["objects"], ph)' "${2:-2}"
}

# 1.
"$STPROF" record -q -o g.stp -- "$PY" "$P" 300 >g.out || fail "recorded run failed"
expect_eq "output under stprof" "$(cat g.out)" "$("$PY" "$P" 300)"
read -r its folded persistent phases <<<"$(summary g.stp 1)"
echo "  300 steps: $its iterations, $folded folded, $persistent persistent objects"
expect_eq "iterations" "$its" 300
expect_eq "iteration 1's phases" "$phases" "forward/0 backward/0 optimizer/0 backward/1 optimizer/1"
[ "$folded" -ge 290 ] || fail "$folded iterations folded (at least 290)"
[ "$persistent" -le 64 ] || fail "$persistent persistent objects (the weights, the optimizers' state and the data: 42-46)"
"$STPROF" report g.stp | grep -q "phases    forward backward optimizer backward\[1\] optimizer\[1\] (markers)" ||
	fail "report: $("$STPROF" report g.stp | grep 'phases  ')"
# its plan's replay names the trace's iterations written in full, even
# where none asks for anything planned (a small model: the min size chosen
# leaves the data alone in the plan), not the allocator's count of them (0)
"$STPROF" plan -o g.plan g.stp >g.plan.txt || fail "plan failed"
grep -q "over the trace's $((its - folded)) iterations written in full" g.plan.txt ||
	fail "plan: $(grep -A1 'at run time' g.plan.txt)"
grep -qi "shapes vary\|not made in every iteration" g.plan.txt && fail "plan of a fixed-shape GAN: $(grep -i 'vary\|not made' g.plan.txt)"

# 2.
"$STPROF" record -q -o s.stp -- "$PY" "$P" 300 stage 150 >/dev/null || fail "recorded run failed (stage)"
read -r its folded persistent phases <<<"$(summary s.stp)"
echo "  a second stage at step 150: $its iterations, $folded folded"
expect_eq "iterations (stage)" "$its" 300
[ "$folded" -ge 285 ] || fail "stage: $folded iterations folded (at least 285)"
"$STPROF" record --full -q -o w.stp -- "$PY" "$P" 300 warmup 50 >/dev/null || fail "recorded run failed (warm-up)"
read -r its folded persistent phases <<<"$(summary w.stp 100)"
echo "  the generator trained from step 50 (--full): $its iterations"
expect_eq "warm-up: iterations" "$its" 300
expect_eq "warm-up: iteration 100's phases" "$phases" "forward/0 backward/0 optimizer/0 backward/1 optimizer/1"
read -r its folded persistent phases <<<"$(summary w.stp 50)"
expect_eq "warm-up: iteration 50's phases" "$phases" "forward/0 backward/0 optimizer/0 backward/1 optimizer/1"

# 3.
C="$STPROF_SRC/tests/python/fold_loop.py"
"$STPROF" record -q -o c.stp -- "$PY" "$C" 100 -1 closure >c.out || fail "recorded run failed (closure)"
expect_eq "closure: output under stprof" "$(cat c.out)" "$("$PY" "$C" 100 -1 closure)"
expect_eq "closure: iteration 1's phases" "$("$STPROF" report --format json c.stp | python3 -c '
import json, sys
t = json.load(sys.stdin)["timeline"]
print(" ".join("%s/%d" % (p["name"], p["micro_batch"]) for p in t["phases"] if p["iteration"] == 1))')" \
	"forward/0 backward/0 optimizer/0"
echo ok

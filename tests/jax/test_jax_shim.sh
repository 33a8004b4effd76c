#!/bin/bash
# A JAX program under stprof with no change to it (docs/jax.md): the same
# output and the same live arrays (count, bytes) after every step; iterations from the jitted step function's calls in each loop
# shape (state threaded through one step, flax's apply_model/update_model
# pair, gradient accumulation with micro-batches, StepTraceAnnotation);
# the JAX buffer space's live bytes equal JAX's own count after every step
# (with donation, accumulation, flax); the report and the plan analyze the
# JAX buffers, each at the Python line that made it, outputs at their HLO
# value and the program's temporary buffer apart; arrays made on another
# thread are recorded.
. "$(dirname "$0")/lib.sh"
# each report reads several million host-heap events (XLA's compiler):
# too slow under the sanitizers (the allocsim and snapshot C tests cover
# the JAX paths there)
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
cd "$T"
# host-heap events (XLA's compiler makes millions) are not looked at here
rec() { out=$1; shift; "$STPROF" record -q -m 64k --host-depth 0 -o "$T/$out.stp" -- "$JAXPY" "$TRAIN" "$@"; }
bytes_ok() { # the JAX space's live bytes = JAX's count at each of N points
	"$STPROF" dump "$T/$1.stp" >"$T/$1.txt"
	python3 "$STPROF_SRC/tests/python/check_bytes.py" "$T/$1.txt" 2 jax_bytes >"$T/$1.cb" || { cat "$T/$1.cb"; fail "JAX bytes differ ($1)"; }
	expect_eq "points compared ($1)" "$(wc -l <"$T/$1.cb")" "$2"
}

# 1. the program's output is the same (default recording options), and so
#    are JAX's live arrays after every step (--live: their count and bytes;
#    the shim holds no array): the program's allocations are its own
want=$("$JAXPY" "$TRAIN" --steps 6 --eval 3 --donate --check --live 2>&1)
got=$("$STPROF" record -q -o "$T/m.stp" -- "$JAXPY" "$TRAIN" --steps 6 --eval 3 --donate --check --live 2>&1)
expect_eq "output under stprof" "$got" "$want"
expect_eq "live-array lines" "$(echo "$got" | grep -c '^step [0-9]*: live [0-9]* arrays, [0-9]* bytes$')" 6

# 2. iterations: the first call compiles and reveals nothing; from the
#    second (it gets back the params its first call returned) each call of
#    train_step ends one; eval_step, run after the 3rd and 6th steps, is a
#    phase of the iteration that follows (an iteration ends with its step)
ts="phase_begin:jit(train_step):0 phase_end:jit(train_step):0"
ev="phase_begin:jit(eval_step):0 phase_end:jit(eval_step):0"
one() { echo -n "iteration_begin::$1 ${2:+$ev }$ts iteration_end::$1 "; }
expect_eq "markers" "$(markers "$T/m.stp")" "$ts $(one 0)$(one 1)$(one 2 e)$(one 3)$(one 4)iteration_begin::5 $ev "
"$STPROF" dump -t marker "$T/m.stp" | grep -q 'name="jax.step jit(train_step)" value=0' || fail "no jax.step annotation"
# the JAX space's live bytes = JAX's count after every step (with donation)
bytes_ok m 6

# 3. gradient accumulation: the apply step makes the iterations, the
#    micro-batches are the grad_step calls' values
want=$("$JAXPY" "$TRAIN" --shape accum --micro 3 --steps 4 --check --live 2>&1)
expect_eq "accumulation: output and live arrays under stprof" "$(rec a --shape accum --micro 3 --steps 4 --check --live 2>&1)" "$want"
mb="phase_begin:jit(grad_step):0 phase_end:jit(grad_step):0 phase_begin:jit(grad_step):1 phase_end:jit(grad_step):1 phase_begin:jit(grad_step):2 phase_end:jit(grad_step):2"
ap="phase_begin:jit(apply_step):0 phase_end:jit(apply_step):0"
g35="phase_begin:jit(grad_step):3 phase_end:jit(grad_step):3 phase_begin:jit(grad_step):4 phase_end:jit(grad_step):4 phase_begin:jit(grad_step):5 phase_end:jit(grad_step):5"
expect_eq "accumulation markers" "$(markers "$T/a.stp")" \
	"$mb $ap $g35 iteration_begin::0 $ap iteration_end::0 iteration_begin::1 $mb $ap iteration_end::1 iteration_begin::2 $mb $ap iteration_end::2 iteration_begin::3 "
bytes_ok a 4

# 4. flax + optax (the flax MNIST example's shape): update_model threads
#    the TrainState; apply_model's calls are phases
want=$("$JAXPY" "$TRAIN" --shape flax --steps 4 --check --donate --live 2>&1)
expect_eq "flax: output and live arrays under stprof" "$(rec f --shape flax --steps 4 --check --donate --live 2>&1)" "$want"
expect_eq "flax markers" "$(markers "$T/f.stp" | cut -d' ' -f7-)" \
	"iteration_begin::0 phase_begin:jit(update_model):0 phase_end:jit(update_model):0 iteration_end::0 iteration_begin::1 phase_begin:jit(apply_model):0 phase_end:jit(apply_model):0 phase_begin:jit(update_model):0 phase_end:jit(update_model):0 iteration_end::1 iteration_begin::2 phase_begin:jit(apply_model):0 phase_end:jit(apply_model):0 phase_begin:jit(update_model):0 phase_end:jit(update_model):0 iteration_end::2 iteration_begin::3 "
bytes_ok f 4

# 5. StepTraceAnnotation makes the iterations, TraceAnnotation a phase
rec s --annotate --steps 3 >/dev/null
expect_eq "annotation markers" "$(markers "$T/s.stp")" \
	"$(for i in 0 1 2; do echo -n "iteration_begin::$i phase_begin:update:0 $ts phase_end:update:0 iteration_end::$i "; done)"

# 6. the report: the JAX space, its iterations, user lines, HLO values,
#    the temporary buffer
"$STPROF" report --no-progress --top 30 "$T/m.stp" >"$T/r.txt" 2>&1 || fail "report: $(tail -3 "$T/r.txt")"
grep -q "^Memory (jax buffers (cpu)), analyzed in depth" "$T/r.txt" || fail "no JAX space: $(grep '^Memory' "$T/r.txt")"
grep -q "^Iterations: 5 from markers" "$T/r.txt" || fail "iterations: $(grep Iterations "$T/r.txt")"
grep -q "^  phases    jit(train_step)" "$T/r.txt" || fail "phases: $(grep phases "$T/r.txt")"
grep -q "^Top call sites by bytes live at the peak (jax buffers (cpu))" "$T/r.txt" || fail "not the JAX space"
first=$(grep -m1 '^      at ' "$T/r.txt")
case "$first" in *"at jax_train.py:"*) ;; *) fail "first site is not a line of the program: $first" ;; esac
grep -qE "at jax_train.py:[0-9]+ in train_step.<locals>.<lambda> \[jit\(train_step\)/sub, output [0-9]+\]" "$T/r.txt" ||
	fail "no output at its HLO value"
grep -qE "at jax_train.py:[0-9]+ in train_step \[temporaries of jit\(train_step\)\]" "$T/r.txt" || fail "no temporaries"
grep -qE "at jax_train.py:[0-9]+ in batch$" "$T/r.txt" || fail "no batch line"
# jnp.sin's first (compiling) call is not a site of JAX's api_boundary
# wrapper (the allocator section's worst moment named it)
"$STPROF" report --no-progress --models-detail --top 30 "$T/m.stp" >"$T/rd.txt" 2>&1 || fail "report --models-detail"
grep -q "^Worst moment" "$T/rd.txt" || fail "no worst moment"
grep -q "reraise_with_filtered_traceback" "$T/rd.txt" && fail "a site named by JAX's api_boundary wrapper"
grep -q "^Allocator models (what-if: these JAX CPU buffers on a GPU" "$T/r.txt" || fail "models not of JAX's buffers"
grep -q "bfc allow_growth (as run; no limit known)" "$T/r.txt" || fail "BFC is not the reference model"

# 7. the plan: of JAX's buffers, verified
"$STPROF" plan -o "$T/m.plan" "$T/m.stp" >"$T/p.txt" 2>&1 || fail "plan: $(cat "$T/p.txt")"
grep -q "JAX's buffers" "$T/p.txt" || fail "the plan is not of JAX's buffers: $(head -2 "$T/p.txt")"
grep -q "^verified:" "$T/p.txt" || fail "plan not verified"

# 8. batches made on another thread are recorded, at their line
rec t --thread --steps 4 >/dev/null
"$STPROF" report --no-progress --top 30 "$T/t.stp" >"$T/rt.txt" 2>&1
grep -qE "at jax_train.py:[0-9]+ in batch$" "$T/rt.txt" || fail "thread's batches not recorded"
echo "ok"

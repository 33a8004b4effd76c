#!/bin/sh
# JAX figures (make bench): the cost of recording a JAX program on the CPU
# (tests/jax/jax_train.py: an MLP, 300 steps of batch 64, width 512; the
# JAX venv scripts/deps.sh bench makes, $STPROF_JAX_VENV) with no change to
# it, as wall-time ratios to the native run (bench/collector/overhead.py,
# median of 5 interleaved rounds):
#   stprof         the default: heap (XLA's compiler makes millions of
#                  allocations), JAX's buffers, markers, XLA's figures
#   stprof-nohheap the heap left out (-m 1G): JAX's buffers and markers
#   stprof-noshim  the collector alone (STPROF_SHIM=0: the heap only)
# then the training loop alone, timed from inside (loop_time.py): with the
# heap left out, the difference per step is the shim's cost per dispatch (a
# jitted call: the live-array scan, the outputs' events, a weak reference
# each, XLA's figures).
set -eu
B=${STPROF_BUILD:?}; S=${STPROF_SRC:?}
JP=${STPROF_JAX_VENV:-$HOME/.cache/stprof/jax-venv}/bin/python
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
"$JP" -c 'import jax' 2>/dev/null || { echo "jax: skipped (no JAX in $JP: scripts/deps.sh bench)"; exit 0; }
X="$S/tests/jax/jax_train.py --steps 300 --width 512"
export JAX_PLATFORMS=cpu OMP_NUM_THREADS=1
echo "jax: jax_train.py --steps 300 --width 512 (CPU), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$S/bench/collector/overhead.py" --cwd "$T" "native=$JP $X" \
  "stprof=$B/stprof record -q -o $T/p{i}.stp -- $JP $X" \
  "stprof-nohheap=$B/stprof record -q -m 1G -o $T/h{i}.stp -- $JP $X" \
  "stprof-noshim=env STPROF_SHIM=0 $B/stprof record -q -o $T/q{i}.stp -- $JP $X"
python3 "$S/bench/jax/loop_time.py" --steps 300 "native=$JP $X --time" \
  "stprof=$B/stprof record -q -o $T/l{i}.stp -- $JP $X --time" \
  "stprof-nohheap=$B/stprof record -q -m 1G -o $T/k{i}.stp -- $JP $X --time"

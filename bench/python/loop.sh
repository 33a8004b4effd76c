#!/bin/sh
# Long-run figures (make bench; docs/record.md "Host heap" and "Long runs"):
# 1. The training loop's overhead on the CPU: examples/torch_transformer.py
#    --iters 20 (/usr/bin/python3, one thread) with its optimizer steps timed
#    from inside (step_times.py), variants run in turn round after round
#    (step_series.py, medians of RUNS, default 5): the loop (the steps after
#    the first two, wall and the training thread's CPU time), the process's
#    CPU time, and the whole run including `import torch`, as ratios to
#    native.  Variants: stprof's default (sampled heap, folding), --full
#    (every event), memray and memray --native (from $MEMRAY_VENV, as
#    run.sh; left out when missing).  The targets: 1.10x for the loop,
#    1.15x for the whole run.
#    Then small_gpt.py (a loop of small operations): native, native with
#    one idle thread (idle_thread.py: glibc's multi-threaded paths, which
#    the collector's flusher thread brings), the default,
#    STPROF_LEAN_HOOKS=1 (lean iterations that keep the module hooks) and
#    STPROF_LEAN=0.  Each loop's overhead as work too (loop_work.py: the
#    stepping thread's perf samples per sample of the BLAS library within
#    the loop, which the machine's drifting speed does not move): native,
#    the default and --full for torch_transformer.py; native, native with
#    one idle thread and the default for small_gpt.py.
# 2. Trace bytes per steady iteration: tests/python/fold_loop.py (an MLP)
#    recorded for 200 and 1,000 steps, the difference over 800; the same
#    with --full.
set -eu
B=${STPROF_BUILD:?}; S=${STPROF_SRC:?}
PY=/usr/bin/python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
$PY -c 'import torch' 2>/dev/null || { echo "python loop: skipped (no torch for $PY)"; exit 0; }
V=${MEMRAY_VENV:-$HOME/.cache/stprof/memray-venv}
W="$S/bench/python/step_times.py"
X="$S/examples/torch_transformer.py --iters 20"
set -- "native=$PY $W $X" \
  "stprof=$B/stprof record -q -o $T/d{i}.stp -- $PY $W $X" \
  "stprof-full=$B/stprof record --full -q -o $T/f{i}.stp -- $PY $W $X"
if [ -x "$V/bin/memray" ]; then
  set -- "$@" "memray=$V/bin/memray run -q -f -o $T/m{i}.bin $W $X" \
    "memray-native=$V/bin/memray run -q -f --native -o $T/n{i}.bin $W $X"
else
  echo "  (memray not found in $V: scripts/deps.sh bench installs it)"
fi
echo "python loop: torch_transformer.py --iters 20 (/usr/bin/python3, CPU, 1 thread); load: $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_NUM_THREADS=1 PYTHONHASHSEED=0 $PY "$S/bench/python/step_series.py" -n "${RUNS:-5}" --cwd "$T" "$@"
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "python loop: torch_transformer.py --iters 20 as work (perf samples); load: $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_NUM_THREADS=1 PYTHONHASHSEED=0 $PY "$S/bench/python/loop_work.py" -n "${RUNS:-5}" --cwd "$T" \
  "native=$PY $W $X" "stprof=$B/stprof record -q -o $T/d{i}.stp -- $PY $W $X" \
  "stprof-full=$B/stprof record --full -q -o $T/f{i}.stp -- $PY $W $X"
# the same with a loop of small operations (what a GPU's host side runs):
# the default (lean iterations) against STPROF_LEAN=0 (docs/record.md,
# "Lean iterations")
G="$S/bench/python/small_gpt.py 300"
echo "python loop: small_gpt.py 300 ($PY, CPU, 1 thread); load: $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_NUM_THREADS=1 PYTHONHASHSEED=0 $PY "$S/bench/python/step_series.py" -n "${RUNS:-5}" --cwd "$T" \
  "native=$PY $W $G" "native-thread=$PY $S/bench/python/idle_thread.py $W $G" \
  "stprof=$B/stprof record -q -o $T/g{i}.stp -- $PY $W $G" \
  "stprof-hooks=env STPROF_LEAN_HOOKS=1 $B/stprof record -q -o $T/h{i}.stp -- $PY $W $G" \
  "stprof-nolean=env STPROF_LEAN=0 $B/stprof record -q -o $T/l{i}.stp -- $PY $W $G"
echo "python loop: small_gpt.py 300 as work (perf samples); load: $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_NUM_THREADS=1 PYTHONHASHSEED=0 $PY "$S/bench/python/loop_work.py" -n "${RUNS:-5}" --cwd "$T" \
  "native=$PY $W $G" "native-thread=$PY $S/bench/python/idle_thread.py $W $G" \
  "stprof=$B/stprof record -q -o $T/g{i}.stp -- $PY $W $G"
P="$S/tests/python/fold_loop.py"
for v in default full; do
  o=; [ $v = default ] || o=--full
  OMP_NUM_THREADS=1 "$B/stprof" record $o -q -o "$T/a.stp" -- $PY "$P" 200 >/dev/null
  OMP_NUM_THREADS=1 "$B/stprof" record $o -q -o "$T/b.stp" -- $PY "$P" 1000 >/dev/null
  a=$(stat -c %s "$T/a.stp") b=$(stat -c %s "$T/b.stp")
  echo "python loop: trace bytes per steady iteration ($v): $(((b - a) / 800)) (fold_loop.py: 200 steps $a bytes, 1,000 steps $b bytes)"
done

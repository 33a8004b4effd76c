#!/bin/sh
# Python shim figures (make bench): the overhead of profiling a real PyTorch
# CPU run, examples/torch_transformer.py --iters 5 (/usr/bin/python3), with
# no change to the script, as wall-time ratios to the native run from one
# interleaved series (bench/collector/overhead.py: median of 5 rounds):
#   stprof        the default: heap + tensor events, Python lines, markers
#   stprof-acc    the default plus op accesses (stprof record --accesses)
#   stprof-noshim the collector alone (STPROF_SHIM=0: no markers; tensor
#                 events and Python lines still come from libstprof.so)
#   memray        `memray run` (Python allocators + malloc, Python frames)
#   memray-native `memray run --native` (plus native frames, as stprof)
# memray runs from the virtual environment scripts/deps.sh bench makes
# ($MEMRAY_VENV, default ~/.cache/stprof/memray-venv, with the system's
# torch); it is left out when missing.  The target: stprof at most
# 1.3x native and below memray --native.
set -eu
B=${STPROF_BUILD:?}; S=${STPROF_SRC:?}
PY=/usr/bin/python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
$PY -c 'import torch' 2>/dev/null || { echo "python: skipped (no torch for $PY)"; exit 0; }
V=${MEMRAY_VENV:-$HOME/.cache/stprof/memray-venv}
X="$S/examples/torch_transformer.py --iters 5"
set -- "native=$PY $X" \
  "stprof=$B/stprof record -q -o $T/p{i}.stp -- $PY $X" \
  "stprof-acc=$B/stprof record --accesses -q -o $T/a{i}.stp -- $PY $X" \
  "stprof-noshim=env STPROF_SHIM=0 $B/stprof record -q -o $T/q{i}.stp -- $PY $X"
if [ -x "$V/bin/memray" ]; then
  set -- "$@" "memray=$V/bin/memray run -q -f -o $T/m{i}.bin $X" \
    "memray-native=$V/bin/memray run -q -f --native -o $T/n{i}.bin $X"
else
  echo "  (memray not found in $V: scripts/deps.sh bench installs it)"
fi
echo "python: torch_transformer.py --iters 5 (/usr/bin/python3, CPU), 1 thread"
OMP_NUM_THREADS=1 PYTHONHASHSEED=0 $PY "$S/bench/collector/overhead.py" --cwd "$T" "$@"
# The same with the script's own thread timed from inside (thread_cpu.py):
# its CPU time moves less with the machine's load than wall time does, and
# leaves out the collector's thread (call-path definitions, writing).
W="$S/bench/python/thread_cpu.py"
echo "python: the script's thread (wall from inside, CPU time of that thread)"
OMP_NUM_THREADS=1 PYTHONHASHSEED=0 $PY "$S/bench/python/thread_cpu_series.py" --cwd "$T" \
  "native=$PY $W $X" "stprof=$B/stprof record -q -o $T/c{i}.stp -- $PY $W $X"
"$B/stprof" record -q -o "$T/x.stp" -- $PY $X >/dev/null
"$B/stprof" info "$T/x.stp" | grep -E "^size|^events" | sed 's/^/  trace: /'
# The long-run figures: loop overhead against memray, trace bytes per
# steady iteration (bench/python/loop.sh).
sh "$S/bench/python/loop.sh"

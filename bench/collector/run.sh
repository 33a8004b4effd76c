#!/bin/sh
# Collector figures (make bench):
#  1. ns per recorded event: malloc/free pairs at a 32-frame call depth,
#     natively and under the collector (the pair costs two events); median of
#     5 runs each; also with libunwind walking instead of our unwinder; and
#     the instructions per event (valgrind), which load does not change.
#  2. trace bytes per event (event chunks only, and the whole file).
#  3. overhead on the bundled example (as in the demo, compute-bound, and an
#     allocation-bound configuration) and on a real PyTorch run: native vs
#     stprof vs heaptrack, wall time, median of 5 interleaved runs; for
#     PyTorch also stprof with 8-frame call paths (-d 8) and none (-d 0),
#     and a longer run (25 iterations) where import torch weighs less.
set -eu
B=${STPROF_BUILD:?}; S=${STPROF_SRC:?}
PY=/usr/bin/python3
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
LIB=$B/libstprof.so
pairs=2000000

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
storm() { # ENV... : prints the median ns per pair of 5 runs
  for i in 1 2 3 4 5; do
    env "$@" "$B/malloc_storm" $pairs 32 | sed 's/.*ns_per_pair=//'
    rm -f "$T"/s.stp*
  done | median
}
echo "1. cost per recorded event (malloc/free at call depth 32, $pairs pairs)"
nat=$(storm X=1)
fast=$(storm LD_PRELOAD="$LIB" STPROF_OUTPUT="$T/s.stp")
lu=$(storm LD_PRELOAD="$LIB" STPROF_OUTPUT="$T/s.stp" STPROF_UNWIND=libunwind)
nost=$(storm LD_PRELOAD="$LIB" STPROF_OUTPUT="$T/s.stp" STPROF_DEPTH=0)
awk -v n="$nat" -v f="$fast" -v l="$lu" -v z="$nost" 'BEGIN {
  printf "  native pair            %7.1f ns\n", n
  printf "  stprof                 %7.1f ns per event  (pair %.1f ns)\n", (f - n) / 2, f
  printf "  stprof, libunwind walk %7.1f ns per event\n", (l - n) / 2
  printf "  stprof, no call paths  %7.1f ns per event\n", (z - n) / 2 }'

# Instructions are what a shared machine cannot blur: valgrind's count of
# the instructions one more malloc/free pair costs (the difference between
# two run lengths, so start and end cancel), natively and recorded.
if command -v valgrind >/dev/null; then
  irs() { # PAIRS ENV...: instructions of one run
    n=$1; shift
    env "$@" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$B/malloc_storm" "$n" 32 2>&1 |
      awk '/I +refs:/ {gsub(",", "", $4); print $4}'
    rm -f "$T"/s.stp*
  }
  ir_pair() { # ENV...: instructions per pair
    a=$(irs 20000 "$@"); b=$(irs 60000 "$@")
    echo $(( (b - a) / 40000 ))
  }
  inat=$(ir_pair X=1)
  ist=$(ir_pair LD_PRELOAD="$LIB" STPROF_OUTPUT="$T/s.stp")
  echo "  instructions per event  $(( (ist - inat) / 2 ))  (valgrind cachegrind: native pair $inat, recorded pair $ist)"
fi

echo "2. trace size"
LD_PRELOAD="$LIB" STPROF_OUTPUT="$T/s.stp" "$B/malloc_storm" $pairs 32 >/dev/null
"$B/stprof" info "$T/s.stp" | grep -E "^size|events  |definitions"
rm -f "$T"/s.stp*
"$B/stprof" record -q -o "$T/t.stp" -- $PY "$S/examples/torch_transformer.py" --iters 5 >/dev/null
echo "  PyTorch run:"; "$B/stprof" info "$T/t.stp" | grep -E "^size|events  |definitions|^events"

echo "3. overhead (wall time)"
echo "  bundled example: train --layers 8 --width 256 --iters 10"
$PY "$S/bench/collector/overhead.py" --cwd "$T" \
  "native=$B/train --layers 8 --width 256 --iters 10" \
  "stprof=$B/stprof record -q -o $T/e{i}.stp -- $B/train --layers 8 --width 256 --iters 10" \
  "heaptrack=heaptrack -o $T/he{i} $B/train --layers 8 --width 256 --iters 10"
rm -f "$T"/e*.stp* "$T"/he*
echo "  bundled example, allocation-bound: train -l 16 -w 8 -b 64 -m 64 -i 400 (8.6 M events)"
A="--layers 16 --width 8 --batch 64 --micro-batches 64 --iters 400"
$PY "$S/bench/collector/overhead.py" --cwd "$T" \
  "native=$B/train $A" \
  "stprof=$B/stprof record -q -o $T/a{i}.stp -- $B/train $A" \
  "heaptrack=heaptrack -o $T/ha{i} $B/train $A"
rm -f "$T"/a*.stp* "$T"/ha*
if $PY -c 'import torch' 2>/dev/null; then
  echo "  PyTorch: torch_transformer.py --iters 5 (/usr/bin/python3, CPU)"
  PYTHONHASHSEED=0 $PY "$S/bench/collector/overhead.py" --cwd "$T" \
    "native=$PY $S/examples/torch_transformer.py --iters 5" \
    "stprof=$B/stprof record -q -o $T/p{i}.stp -- $PY $S/examples/torch_transformer.py --iters 5" \
    "stprof-d8=$B/stprof record -q -d 8 -o $T/q{i}.stp -- $PY $S/examples/torch_transformer.py --iters 5" \
    "stprof-d0=$B/stprof record -q -d 0 -o $T/r{i}.stp -- $PY $S/examples/torch_transformer.py --iters 5" \
    "heaptrack=heaptrack -o $T/hp{i} $PY $S/examples/torch_transformer.py --iters 5"
  rm -f "$T"/p*.stp* "$T"/q*.stp* "$T"/r*.stp* "$T"/hp*
  echo "  PyTorch, a longer run: --iters 25 (import torch is a fixed cost)"
  PYTHONHASHSEED=0 $PY "$S/bench/collector/overhead.py" --cwd "$T" \
    "native=$PY $S/examples/torch_transformer.py --iters 25" \
    "stprof=$B/stprof record -q -o $T/l{i}.stp -- $PY $S/examples/torch_transformer.py --iters 25"
fi

# The Compute Sanitizer backend's host work per launch when the live-object
# table changes before each launch (a PyTorch step's shape: a new map each
# time), on the fake device of collector/sanitizer/tests (its own memory
# traffic included): page faults and CPU time of the whole recording, per
# launch; page faults do not depend on the machine's load.
if [ -x "$B/sz_fake_program" ] && [ -r "$B/libsz_fake_device.so" ] && command -v perf >/dev/null 2>&1; then
  echo "4. --accesses=exact host work, fake device, churn 5000 (2,000 live objects, a new map per launch)"
  for i in 1 2 3; do
    STPROF_SANITIZER_LIB="$B/libsz_fake_device.so" perf stat -x, -e page-faults,task-clock -- \
      "$B/stprof" record --accesses=exact -q -o "$T/z.stp" -- "$B/sz_fake_program" churn 5000 2>&1 >/dev/null |
      awk -F, '/page-faults/ {p = $1} /task-clock/ {t = $1} END {print t, p}'
  done | sort -n | sed -n 2p | awk '{printf "  median of 3: %.1f us CPU, %.1f page faults per launch\n", $1 * 1000 / 5000, $2 / 5000}'
  rm -f "$T"/z.stp*
fi

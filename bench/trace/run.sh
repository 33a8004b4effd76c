#!/bin/sh
# Reader figures (make bench): events per second of CPU time and MB/s for a
# malloc/free trace and a real PyTorch trace, best of 3 passes.
set -eu
B=${STPROF_BUILD:?}; S=${STPROF_SRC:?}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
LD_PRELOAD="$B/libstprof.so" STPROF_OUTPUT="$T/s.stp" "$B/malloc_storm" 2000000 32 >/dev/null
printf '  malloc/free loop: '; "$B/read_trace" "$T/s.stp"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  "$B/stprof" record -q -o "$T/t.stp" -- /usr/bin/python3 "$S/examples/torch_transformer.py" --iters 5 >/dev/null
  printf '  PyTorch run:      '; "$B/read_trace" "$T/t.stp"
fi

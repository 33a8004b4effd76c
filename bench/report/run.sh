#!/bin/sh
# bench/report/run.sh - the HTML report's interactive viewer: how long
# `stprof report -f html` takes, how large the page is, and how fast it
# opens and responds in headless Chromium (viewer_load.py: load, whole-run
# redraw, zoomed redraw, hover, allocator state; median of RUNS), on
#   - a 5-iteration GPT-style PyTorch CPU run (examples/torch_transformer.py
#     --iters 5; its tensors, the space the report analyzes), target: opens
#     in under 2 s;
#   - the same trace's host heap (--space host: 1.2 M objects, 10^6 drawn
#     one by one, the rest as one band);
#   - pftrace_synth's 10^6 device objects with recorded segments.
# Environment: STPROF_BUILD, STPROF_SRC, RUNS (5).  Skips what it lacks
# (chromium, torch).
set -eu
build=${STPROF_BUILD:-build}
src=${STPROF_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
runs=${RUNS:-5}
stprof=$build/stprof
[ -x "$stprof" ] || { echo "build first: $stprof" >&2; exit 1; }
command -v chromium >/dev/null || { echo "no chromium: skipped"; exit 0; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian: time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(chromium --version 2>/dev/null | head -1)"

page() { # label, trace, report options...
  label=$1
  trace=$2
  shift 2
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$stprof" report -f html -o "$tmp/page.html" "$@" "$trace" 2>/dev/null
  awk -v l="$label" '{ printf "%s: report -f html %.2f s, peak rss %.0f MiB\n", l, $1, $2 / 1024 }' "$tmp/time"
  /usr/bin/python3 "$src/bench/report/viewer_load.py" "$tmp/page.html" "$runs"
}

if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  "$stprof" record -q -o "$tmp/gpt.stp" -- /usr/bin/python3 "$src/examples/torch_transformer.py" --iters 5 >/dev/null
  page "GPT-style run, 5 iterations (its CPU tensors)" "$tmp/gpt.stp"
  page "the same run's host heap (--space host)" "$tmp/gpt.stp" --space host
else
  echo "no torch for /usr/bin/python3: the PyTorch run skipped"
fi
if [ -x "$build/pftrace_synth" ]; then
  "$build/pftrace_synth" "$tmp/synth.stp" 1000000 2>/dev/null
  page "pftrace_synth, 10^6 device objects with segments" "$tmp/synth.stp"
fi

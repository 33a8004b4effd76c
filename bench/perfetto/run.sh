#!/bin/sh
# bench/perfetto/run.sh - `stprof export` on a synthetic trace of 10^6
# objects (pftrace_synth), with the detector (classes, patterns, findings,
# allocator models: the default), without the models, and without the
# detector: wall time, CPU time and peak RSS (/usr/bin/time), and the output
# size.  Targets (issue "Perfetto timelines"): <= 5 s and
# about 200 MB of memory for 10^6 objects; the file should stay well under
# 0.5 GB for the UI.  Then the same with --top and --window, and the lint.
# Environment: STPROF_BUILD (build tree), OBJECTS (default 1000000).
set -eu
build=${STPROF_BUILD:-build}
objects=${OBJECTS:-1000000}
stprof=$build/stprof
synth=$build/pftrace_synth
[ -x "$stprof" ] && [ -x "$synth" ] || { echo "build first: $stprof, $synth" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian: time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$synth" "$tmp/synth.stp" "$objects" 2>"$tmp/synth.log"
echo "trace: $(cat "$tmp/synth.log"), $(du -k "$tmp/synth.stp" | cut -f1) KiB"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

run() { # label, then the command
  label=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >/dev/null
  awk -v l="$label" '{ printf "%-28s wall %6.2f s  cpu %6.2f s  peak rss %7.1f MiB\n", l, $1, $2 + $3, $4 / 1024 }' "$tmp/time"
}
size() { stat -c %s "$1" | awk '{ printf "%-28s %.1f MiB\n", "  output", $1 / 1048576 }'; }

run "export (all objects)" "$stprof" export -q -o "$tmp/all.pftrace" "$tmp/synth.stp"
size "$tmp/all.pftrace"
run "export --no-models" "$stprof" export -q --no-models -o "$tmp/nm.pftrace" "$tmp/synth.stp"
run "export --no-analysis" "$stprof" export -q --no-analysis -o "$tmp/na.pftrace" "$tmp/synth.stp"
size "$tmp/na.pftrace"
run "export --top 10000" "$stprof" export -q --top 10000 -o "$tmp/top.pftrace" "$tmp/synth.stp"
size "$tmp/top.pftrace"
run "export --window 100ms:200ms" "$stprof" export -q --window 100ms:200ms -o "$tmp/win.pftrace" "$tmp/synth.stp"
size "$tmp/win.pftrace"
run "lint-perfetto (all objects)" "$stprof" lint-perfetto -q "$tmp/all.pftrace"

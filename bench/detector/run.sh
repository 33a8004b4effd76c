#!/bin/sh
# bench/detector/run.sh - `stprof report` throughput and memory: the whole
# report with its defaults (both passes, classes, patterns, the allocator
# models with the worst moment and the recommendations) on large generated
# traces (gen.c): a training-like host trace with markers, the same without
# markers (iterations detected), and one with an API event per allocation
# and free on two streams (DrGPUM patterns, topological levels); then a real
# PyTorch CPU trace (examples/torch_transformer.py recorded by stprof
# record) when python3 has torch.
# Prints, per trace: events, wall and CPU seconds (the best of RUNS runs:
# the machine may be shared), M events per CPU second, maximum resident
# memory and bytes per event; the same without the models for comparison.
# EVENTS (default 10000000) sets the generated traces' size, RUNS (3) the
# repetitions, TORCH=0 skips the PyTorch trace.  Target: >= 5 M events/s on
# one core.  Needs GNU time (/usr/bin/time).
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
N=${EVENTS:-10000000}
RUNS=${RUNS:-3}
PY=${STPROF_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); best of $RUNS runs"
printf '%-22s %12s %8s %8s %10s %10s %9s\n' trace events wall_s cpu_s Mev/cpu_s maxrss_MiB B/event

# best (lowest CPU) of RUNS runs of stprof report with extra options $2
measure() { # label, options, trace, events
	best=""
	i=0
	while [ $i -lt "$RUNS" ]; do
		# shellcheck disable=SC2086
		/usr/bin/time -f '%e %U %S %M' -o "$T/time" "$B/stprof" report --no-progress $2 "$3" >"$T/out"
		read -r wall user sys rss <"$T/time"
		cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
		if [ -z "$best" ] || awk -v a="$cpu" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$cpu bwall=$wall brss=$rss
		fi
		i=$((i + 1))
	done
	awk -v k="$1" -v ev="$4" -v w="$bwall" -v cpu="$best" -v r="$brss" 'BEGIN {
		printf "%-22s %12d %8.2f %8.2f %10.2f %10.1f %9.2f\n", k, ev, w, cpu, ev / cpu / 1e6, r / 1024, r * 1024 / ev }'
}

for kind in markers nomarkers api; do
	case $kind in
	markers) "$B/det_bench_gen" "$T/t.stp" "$N" >"$T/n" ;;
	nomarkers) "$B/det_bench_gen" "$T/t.stp" "$N" nomarkers >"$T/n" ;;
	api) "$B/det_bench_gen" "$T/t.stp" "$N" api >"$T/n" ;;
	esac
	ev=$(cat "$T/n")
	measure "$kind" "" "$T/t.stp" "$ev"
	grep -E '^Iterations|^  peak|^  fed ' "$T/out" | sed 's/^/    /'
	measure "  $kind --no-models" "--no-models" "$T/t.stp" "$ev"
	rm -f "$T/t.stp"
done

if [ "${TORCH:-1}" != 0 ] && "$PY" -c 'import torch' 2>/dev/null && [ -f "$B/libstprof.so" ]; then
	"$B/stprof" record -q -o "$T/torch.stp" "$PY" "$S/examples/torch_transformer.py" >/dev/null
	ev=$("$B/stprof" info "$T/torch.stp" | awk '/^events:/ { print $2 }')
	measure "torch_transformer.py" "" "$T/torch.stp" "$ev"
	grep -E '^Iterations|^  peak|more call sites|^  fed ' "$T/out" | sed 's/^/    /'
	measure "  torch --no-models" "--no-models" "$T/torch.stp" "$ev"
fi

#!/bin/sh
# bench/detector/run.sh - `stprof report` throughput and memory on large
# generated traces (gen.c): a training-like host trace with markers, the
# same without markers (iterations detected), and one with an API event per
# allocation and free on two streams (DrGPUM patterns, topological levels).
# Prints, per trace: events, wall and CPU seconds of the whole report, M
# events per CPU second, maximum resident memory and bytes per event.
# EVENTS (default 10000000) sets the size.  Target: >= 5 M events/s on one
# core.  Needs GNU time (/usr/bin/time).
set -eu
B=${STPROF_BUILD:?}
N=${EVENTS:-10000000}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
printf '%-22s %12s %8s %8s %10s %10s %9s\n' trace events wall_s cpu_s Mev/cpu_s maxrss_MiB B/event
for kind in markers nomarkers api; do
	case $kind in
	markers) "$B/det_bench_gen" "$T/t.stp" "$N" >"$T/n" ;;
	nomarkers) "$B/det_bench_gen" "$T/t.stp" "$N" nomarkers >"$T/n" ;;
	api) "$B/det_bench_gen" "$T/t.stp" "$N" api >"$T/n" ;;
	esac
	ev=$(cat "$T/n")
	/usr/bin/time -f '%e %U %S %M' -o "$T/time" "$B/stprof" report --no-progress "$T/t.stp" >"$T/out"
	read -r wall user sys rss <"$T/time"
	awk -v k="$kind" -v ev="$ev" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" 'BEGIN {
		cpu = u + s; printf "%-22s %12d %8.2f %8.2f %10.2f %10.1f %9.2f\n", k, ev, w, cpu, ev / cpu / 1e6,
		r / 1024, r * 1024 / ev }'
	grep -E '^Iterations|^  peak' "$T/out" | sed 's/^/    /'
	rm -f "$T/t.stp"
done

#!/bin/sh
# bench/allocator/infer.sh - inference latency with libstalloc against the
# caching allocators (MemoMalloc's setting, seed 004): a residual CNN in
# eval mode, one thread (tests/allocator/torch_resnet_infer.py), timed per
# batch inside the program (the median of BATCHES batches after 10: wall
# clock, and the thread's CPU time, which a shared machine's load moves
# less), under glibc, jemalloc, mimalloc and tcmalloc (Debian's libjemalloc2,
# libmimalloc2.0, libgoogle-perftools4: scripts/deps.sh bench) and under
# libstalloc enforcing the plan `stprof plan` made of a recorded run at
# batch 8 (no options), with and without huge pages for its pool.  Two
# cases: batch 8, the planned path; batch 6, which the plan does not
# know: every request takes libstalloc's fallback.  Rounds are interleaved
# (one run of each per round) so that the machine's load moves them alike;
# prints each one's median over the rounds and its best round, then
# libstalloc against the best of the others.
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=${STPROF_PYTHON:-/usr/bin/python3}
rounds=${BENCH_INFER_ROUNDS:-5}
batches=${BENCH_INFER_BATCHES:-60}
prog="$S/tests/allocator/torch_resnet_infer.py"
if ! "$PY" -c "import torch" 2>/dev/null; then
	echo "inference: no torch for $PY: skipped"
	exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
L=/usr/lib/x86_64-linux-gnu
"$B/stprof" record -q -o "$T/i.stp" -- "$PY" "$prog" 12 >/dev/null
"$B/stprof" plan -q -o "$T/i.plan" "$T/i.stp"
names="glibc jemalloc mimalloc tcmalloc stalloc stalloc-4k"

case_() { # LABEL BATCH
	label=$1 bs=$2
	echo "inference, $label: batch $bs, 1 thread, ms per batch (median of $batches after 10), $rounds interleaved rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
	rm -f "$T"/r.*
	for r in $(seq "$rounds"); do
		for n in $names; do
			pre="" env=""
			case $n in
			jemalloc) pre=$L/libjemalloc.so.2 ;;
			mimalloc) pre=$L/libmimalloc.so.2 ;;
			tcmalloc) pre=$L/libtcmalloc.so.4 ;;
			stalloc-4k) env="STALLOC_HUGEPAGES=0" ;;
			esac
			[ -z "$pre" ] || [ -f "$pre" ] || continue
			case $n in
			stalloc*) out=$(env $env "$B/stprof" run -q --plan "$T/i.plan" -- "$PY" "$prog" $((batches + 10)) --time --warmup 10 --batch "$bs") ;;
			*) out=$(env LD_PRELOAD="$pre" "$PY" "$prog" $((batches + 10)) --time --warmup 10 --batch "$bs") ;;
			esac
			echo "$out" | sed -n 's/^median_ms=\([0-9.]*\).*/\1/p' >>"$T/r.$n"
			echo "$out" | sed -n 's/.*cpu_median_ms=\([0-9.]*\).*/\1/p' >>"$T/r.$n.cpu"
			echo "$out" | sed -n 's/.*faults_per_batch=\([0-9]*\).*/\1/p' >>"$T/r.$n.flt"
		done
	done
	for n in $names; do
		if [ ! -s "$T/r.$n" ]; then
			printf "  %-11s not installed\n" "$n"
			continue
		fi
		cpu=$(sort -n "$T/r.$n.cpu" | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }')
		flt=$(sort -n "$T/r.$n.flt" | awk '{ v[NR] = $1 } END { printf "%d", v[int((NR + 1) / 2)] }')
		sort -n "$T/r.$n" | awk -v n="$n" -v c="$cpu" -v f="$flt" '{ v[NR] = $1 } END {
			printf "  %-11s wall %8.3f ms (best round %8.3f)   thread CPU %8.3f ms   %6d page faults a batch\n", n, v[int((NR + 1) / 2)], v[1], c, f }'
	done | tee "$T/table"
	awk '$1 !~ /^stalloc/ && $2 == "wall" { if (!bw || $3 < bw) { bw = $3; ww = $1 }; if (!bc || $10 < bc) { bc = $10; cw = $1 } }
	     $1 == "stalloc" { sw = $3; sc = $10 }
	     END { if (bw && sw) printf "  libstalloc against the best other: wall %.1f%% lower than %s, thread CPU %.1f%% lower than %s\n",
	                              100 * (1 - sw / bw), ww, 100 * (1 - sc / bc), cw }' "$T/table"
}

case_ "the planned path" 8
case_ "the fallback path" 6

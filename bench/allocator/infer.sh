#!/bin/sh
# bench/allocator/infer.sh - inference latency with libstalloc against the
# caching allocators (MemoMalloc's setting, seed 004), under glibc,
# jemalloc, mimalloc and tcmalloc (Debian's libjemalloc2, libmimalloc2.0,
# libgoogle-perftools4: scripts/deps.sh bench) and libstalloc enforcing the
# plan `stprof plan` made of a recorded run (no options), with and without
# huge pages for its pool.  Each program times its requests itself (the
# median after a warm-up: wall clock; with one thread also that thread's
# CPU time, which a shared machine's load moves less) and counts page
# faults.  The cases:
#   cnn-planned   tests/allocator/torch_resnet_infer.py, a residual CNN in
#                 eval mode, batch 8, one thread: the planned path;
#   cnn-fallback  the same at batch 6, which the plan (of batch 8) does not
#                 know: its requests take libstalloc's fallback;
#   cnn-2threads  batch 8 with torch.set_num_threads(2);
#   encoder-2clients  tests/allocator/torch_encoder_infer.py, a transformer
#                 encoder, 2 request threads at once each answering batch-4
#                 requests (planned from a recording with 2 clients: the
#                 threads' requests interleave in another order every run);
#   encoder-1client   the same, one client, batch 1.
# Rounds are interleaved (one run of each allocator per round) so that the
# machine's load moves them alike; prints each one's median over the rounds
# and its best round, then libstalloc against the best of jemalloc,
# mimalloc and tcmalloc.  BENCH_INFER_CASES picks cases (default: all).
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=${STPROF_PYTHON:-/usr/bin/python3}
rounds=${BENCH_INFER_ROUNDS:-5}
batches=${BENCH_INFER_BATCHES:-60}
cases=${BENCH_INFER_CASES:-cnn-planned cnn-fallback cnn-2threads encoder-2clients encoder-1client}
cnn="$S/tests/allocator/torch_resnet_infer.py"
enc="$S/tests/allocator/torch_encoder_infer.py"
if ! "$PY" -c "import torch" 2>/dev/null; then
	echo "inference: no torch for $PY: skipped"
	exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
L=/usr/lib/x86_64-linux-gnu
echo "inference on $(nproc) CPUs ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)); $(date -u '+%Y-%m-%d %H:%M UTC')"
names="glibc jemalloc mimalloc tcmalloc stalloc stalloc-4k"

plan() { # NAME PROGRAM ARGS...: records a run and plans it
	n=$1
	shift
	"$B/stprof" record -q -o "$T/$n.stp" -- "$PY" "$@" >/dev/null
	"$B/stprof" plan -q -o "$T/$n.plan" "$T/$n.stp"
}

case_() { # LABEL PLAN WHAT PROGRAM ARGS...
	label=$1 pl=$2 what=$3
	shift 3
	echo "$label: $what, ms per request (median after 10), $rounds interleaved rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
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
			stalloc*) out=$(env $env "$B/stprof" run -q --plan "$T/$pl.plan" --stalloc-stats "$T/s.$n" -- "$PY" "$@") ;;
			*) out=$(env LD_PRELOAD="$pre" "$PY" "$@") ;;
			esac
			for k in median_ms cpu_median_ms faults_per_batch faults_per_request rps; do
				echo "$out" | tr ' ' '\n' | sed -n "s/^$k=//p" >>"$T/r.$n.$k"
			done
			case $n in
			stalloc) tr ' ' '\n' <"$T/s.$n" | awk -F= '{ v[$1] = $2 } END { q = v["requests"] - v["small"]; f = v["fallbacks"] - v["small"]; printf "%d %d %d\n", q, q - f, f }' >>"$T/r.hits" ;;
			esac
		done
	done
	med() { [ -s "$1" ] && sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] }' || printf -- "-"; }
	for n in $names; do
		if [ ! -s "$T/r.$n.median_ms" ]; then
			printf "  %-11s not installed\n" "$n"
			continue
		fi
		best=$(sort -n "$T/r.$n.median_ms" | head -1)
		flt=$(cat "$T/r.$n.faults_per_batch" "$T/r.$n.faults_per_request" 2>/dev/null >"$T/f"; med "$T/f")
		extra=""
		[ -s "$T/r.$n.cpu_median_ms" ] && extra="   thread CPU $(med "$T/r.$n.cpu_median_ms") ms"
		[ -s "$T/r.$n.rps" ] && extra="   $(med "$T/r.$n.rps") requests/s"
		printf "  %-11s wall %8.3f ms (best round %8.3f)%s   %.0f page faults a request\n" "$n" "$(med "$T/r.$n.median_ms")" "$best" "$extra" "$flt"
	done | tee "$T/table"
	awk '{ q += $1; h += $2; f += $3 } END { if (q) printf "  libstalloc: %.1f%% of its requests of the plan'\''s sizes served by the plan, %.1f fallbacks a run\n", 100 * h / q, f / NR }' "$T/r.hits"
	awk '$1 ~ /^(jemalloc|mimalloc|tcmalloc)$/ && $2 == "wall" { if (!bw || $3 < bw) { bw = $3; ww = $1 } }
	     $1 == "stalloc" { sw = $3 }
	     END { if (bw && sw) printf "  libstalloc against the best of jemalloc, mimalloc, tcmalloc: wall %.1f%% %s than %s%s\n",
	                              100 * (sw < bw ? 1 - sw / bw : sw / bw - 1), sw < bw ? "lower" : "higher", ww,
	                              (1 - sw / bw >= 0.1) ? " (the 10% goal met)" : " (the 10% goal not met)" }' "$T/table"
}

for c in $cases; do
	case $c in
	cnn-planned)
		[ -f "$T/cnn.plan" ] || plan cnn "$cnn" 12
		case_ "$c" cnn "batch 8, 1 thread (the plan's own batch)" "$cnn" $((batches + 10)) --time --warmup 10 --batch 8 ;;
	cnn-fallback)
		[ -f "$T/cnn.plan" ] || plan cnn "$cnn" 12
		case_ "$c" cnn "batch 6, 1 thread (a plan of batch 8: the fallback)" "$cnn" $((batches + 10)) --time --warmup 10 --batch 6 ;;
	cnn-2threads)
		[ -f "$T/cnn2.plan" ] || plan cnn2 "$cnn" 12 --threads 2
		case_ "$c" cnn2 "batch 8, torch.set_num_threads(2)" "$cnn" $((batches + 10)) --time --warmup 10 --batch 8 --threads 2 ;;
	encoder-2clients)
		[ -f "$T/enc2.plan" ] || plan enc2 "$enc" 12 --clients 2
		case_ "$c" enc2 "transformer encoder, 2 request threads at once, batch 4" "$enc" $((batches + 10)) --time --warmup 10 --clients 2 --batch 4 ;;
	encoder-1client)
		[ -f "$T/enc1.plan" ] || plan enc1 "$enc" 12 --batch 1
		case_ "$c" enc1 "transformer encoder, 1 request thread, batch 1" "$enc" $((batches + 10)) --time --warmup 10 --batch 1 ;;
	*) echo "infer.sh: no case '$c' (cases: cnn-planned cnn-fallback cnn-2threads encoder-2clients encoder-1client)" >&2
	   exit 2 ;;
	esac
done

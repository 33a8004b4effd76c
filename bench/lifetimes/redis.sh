#!/bin/bash
# bench/lifetimes/redis.sh - Debian's redis-server under redis-benchmark with
# each allocator side by side: glibc, jemalloc (the one redis links),
# mimalloc, tcmalloc (preloaded, as their Debian packages ship them) and
# libstalloc's lifetime heap with a model learned from two earlier runs.
#
#   bench/lifetimes/redis.sh [BUILD]
#
# Environment: CONNS (2000), N (200000 SET + as many GET), KEYS (100000),
# SIZE (1000 bytes), REPEAT (5 rounds, the allocators interleaved in each),
# ALLOCS (the list), FRAG (1: also fill / delete 90% / refill with 300-byte
# values of other keys), OUT (a folder for the traces, model and samples),
# BASE (another build folder: ALLOCS may then name stalloc-base, its
# libstalloc with the same model, to tell what a change costs), REF (the
# allocator of the pairs below, jemalloc).
#
# Prints per run: SET and GET requests per second, the server's CPU seconds,
# peak and final RSS, used_memory (INFO memory: the bytes redis holds, as
# malloc_usable_size counts them), RSS / used_memory at the end (2 s after
# the benchmark's last client left, and 6 s after) and anonymous huge pages
# at 2 s; then the medians; then each allocator over REF (jemalloc) round by
# round (SET/s, GET/s, server CPU s: both served the same requests), the
# median of those ratios and their range, and a line saying so when the
# range is too wide (over 10 points, or under 5 pairs) to tell a 5%
# difference.  Samples every 0.5 s in OUT/samples-ALLOC-ROUND.csv (t, RSS,
# used_memory, huge pages); the server's /proc/PID/smaps at 6 s in
# OUT/smaps-ALLOC-ROUND.txt (where its RSS is).  The machine's load is printed with each round:
# throughput on a shared VM moves with it.
set -u
B=${1:-build}
S=$(cd "$B" && pwd)/stprof
LIB=$(cd "$B" && pwd)/libstalloc.so
CONNS=${CONNS:-2000} N=${N:-200000} KEYS=${KEYS:-100000} SIZE=${SIZE:-1000} REPEAT=${REPEAT:-5}
ALLOCS=${ALLOCS:-"glibc jemalloc mimalloc tcmalloc stalloc stalloc-4k"}
FRAG=${FRAG:-1}
W=${OUT:-$(mktemp -d /tmp/stprof-lt-redis.XXXXXX)}
mkdir -p "$W"
LIBDIR=/usr/lib/x86_64-linux-gnu
ulimit -n 65536 2>/dev/null || ulimit -n 20000 2>/dev/null || true
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	{ echo "redis.sh: redis-server and redis-benchmark are needed (scripts/deps.sh bench)" >&2; exit 2; }
PORT=$((7400 + RANDOM % 500))
RARGS="--port $PORT --save '' --appendonly no --maxclients 10000 --daemonize no"

wait_up() {
	for _ in $(seq 100); do redis-cli -p $PORT ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
	echo "redis.sh: the server did not start" >&2; return 1
}
stop() { redis-cli -p $PORT shutdown nosave >/dev/null 2>&1; wait "$1" 2>/dev/null; }
used() { redis-cli -p $PORT info memory | tr -d '\r' | sed -n 's/^used_memory://p'; }
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/$1/status 2>/dev/null; }
huge_kb() { awk '/^AnonHugePages/ {print $2}' /proc/$1/smaps_rollup 2>/dev/null; }
cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat 2>/dev/null; }

# start ALLOC: the server in the background, its pid in $pid
start() {
	case $1 in
	glibc) eval "env LD_PRELOAD=$LIB redis-server $RARGS --logfile $W/log &" ;; # libstalloc without a plan: glibc's calls
	jemalloc) eval "redis-server $RARGS --logfile $W/log &" ;;
	mimalloc) eval "env LD_PRELOAD=$LIBDIR/libmimalloc.so.2 redis-server $RARGS --logfile $W/log &" ;;
	tcmalloc) eval "env LD_PRELOAD=$LIBDIR/libtcmalloc_minimal.so.4 redis-server $RARGS --logfile $W/log &" ;;
	stalloc-4k) eval "STALLOC_HUGEPAGES=0 $S run -q --plan $W/redis.lt -- redis-server $RARGS --logfile $W/log &" ;;
	stalloc) eval "STALLOC_HUGEPAGES=${STALLOC_HUGEPAGES:-1} $S run -q --plan $W/redis.lt --stalloc-stats $W/stalloc-stats.txt -- redis-server $RARGS --logfile $W/log &" ;;
	stalloc-base) eval "STALLOC_HUGEPAGES=${STALLOC_HUGEPAGES:-1} $(cd "${BASE:?BASE: the build folder of the libstalloc to compare}" && pwd)/stprof run -q --plan $W/redis.lt -- redis-server $RARGS --logfile $W/log &" ;;
	record) eval "$S record -q -o $2 -- redis-server $RARGS --logfile $W/log &" ;;
	esac
	pid=$!
	wait_up
}

bench() { redis-benchmark -p $PORT -q -c "$CONNS" -n "$1" -r "$KEYS" -d "$SIZE" -t set,get 2>&1 | tr '\r' '\n' | grep -a "requests per second"; }

# 1. two recorded runs at a quarter of the load: one to learn from, one held out
echo "== learning: two recorded runs of redis-benchmark -c $CONNS -n $((N / 4)) -r $KEYS -d $SIZE -t set,get"
for t in train test; do
	start record "$W/$t.stp" || exit 1
	bench $((N / 4)) >/dev/null
	stop "$pid"
	sleep 0.5
done
"$S" plan --lifetimes "$W/train.stp" -o "$W/redis.lt" --test "$W/test.stp" || exit 1

# 2. the allocators, interleaved, REPEAT rounds
printf '\n%-10s %5s %8s %8s %7s %8s %8s %8s %8s %8s %8s\n' alloc round SET/s GET/s cpu_s peakMiB endMiB usedMiB RSS/used hugeMiB ratio@6s
: > "$W/runs.txt"
for r in $(seq "$REPEAT"); do
	echo "-- round $r, load $(cut -d' ' -f1-3 /proc/loadavg)"
	order=$ALLOCS # every other round backwards: no allocator always runs first
	[ $((r % 2)) = 0 ] && order=$(echo $ALLOCS | tr ' ' '\n' | tac | tr '\n' ' ')
	for a in $order; do
		start "$a" || continue
		c0=$(cpu_ticks $pid)
		csv="$W/samples-$a-$r.csv"
		echo "t,rss_kb,used_bytes,huge_kb" > "$csv"
		( t=0; while kill -0 $pid 2>/dev/null; do echo "$t,$(rss_kb $pid),$(used),$(huge_kb $pid)" >> "$csv"; sleep 0.5; t=$(echo "$t + 0.5" | bc); done ) &
		sampler=$!
		out=$(bench "$N")
		c1=$(cpu_ticks $pid)
		sleep 2
		redis-cli -p $PORT ping >/dev/null
		u=$(used); rk=$(rss_kb $pid); hk=$(huge_kb $pid)
		sleep 4
		rk6=$(rss_kb $pid)
		cat /proc/$pid/smaps > "$W/smaps-$a-$r.txt" 2>/dev/null
		peak=$(awk -F, 'NR > 1 && $2 > m {m = $2} END {print m + 0}' "$csv")
		[ "$rk" -gt "$peak" ] && peak=$rk
		kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
		setr=$(echo "$out" | sed -n 's/.*SET: \([0-9.]*\) requests.*/\1/p' | tail -1)
		getr=$(echo "$out" | sed -n 's/.*GET: \([0-9.]*\) requests.*/\1/p' | tail -1)
		cpu=$(echo "scale=2; ($c1 - $c0) / $(getconf CLK_TCK)" | bc)
		line=$(awk -v a=$a -v r=$r -v s="$setr" -v g="$getr" -v c="$cpu" -v p="$peak" -v e="$rk" -v u="$u" -v h="$hk" -v e6="$rk6" \
			'BEGIN {printf "%-10s %5d %8.0f %8.0f %7.2f %8.1f %8.1f %8.1f %8.3f %8.1f %8.3f", a, r, s, g, c, p / 1024, e / 1024, u / 1048576, e * 1024 / u, h / 1024, e6 * 1024 / u}')
		echo "$line"
		echo "$line" >> "$W/runs.txt"
		stop "$pid"
		sleep 0.5
	done
done
echo
echo "medians over $REPEAT rounds:"
for a in $ALLOCS; do
	grep "^$a " "$W/runs.txt" | awk -v a=$a '
		{ for (i = 3; i <= 11; i++) v[i, NR] = $i; n = NR }
		function med(i,   k, j, t, s) { for (k = 1; k <= n; k++) s[k] = v[i, k]; for (k = 1; k <= n; k++) for (j = k + 1; j <= n; j++) if (s[j] < s[k]) { t = s[k]; s[k] = s[j]; s[j] = t } return n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2 }
		END { if (n) printf "%-10s %5s %8.0f %8.0f %7.2f %8.1f %8.1f %8.1f %8.3f %8.1f %8.3f\n", a, "med", med(3), med(4), med(5), med(6), med(7), med(8), med(9), med(10), med(11) }'
done
# pairs: each allocator over REF (jemalloc, redis's own) in the same round,
# so that a round's load moves both sides of a ratio; the median of the
# ratios and their spread say whether a 5% difference can be told apart
REF=${REF:-jemalloc}
if grep -q "^$REF " "$W/runs.txt"; then
	echo
	echo "pairs over $REF, round by round (SET/s and GET/s: higher is better; server CPU s per request: lower is better):"
	printf '%-10s %5s %8s %8s %8s\n' alloc round SET GET cpu
	for a in $ALLOCS; do
		[ "$a" = "$REF" ] && continue
		awk -v a=$a -v ref=$REF '
			NR == FNR { if ($1 == ref) { s[$2] = $3; g[$2] = $4; c[$2] = $5 } next }
			$1 == a && ($2 in s) && s[$2] > 0 && g[$2] > 0 && c[$2] > 0 && $5 > 0 {
				n++; rs[n] = $3 / s[$2]; rg[n] = $4 / g[$2]
				# CPU per request: each run serves the same requests, so the ratio of the seconds
				rc[n] = $5 / c[$2]
				printf "%-10s %5d %8.3f %8.3f %8.3f\n", a, $2, rs[n], rg[n], rc[n] }
			function sort(v,   k, j, t) { for (k = 1; k <= n; k++) for (j = k + 1; j <= n; j++) if (v[j] < v[k]) { t = v[k]; v[k] = v[j]; v[j] = t } }
			function med(v) { sort(v); return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
			END {
				if (!n) exit
				ms = med(rs); mg = med(rg); mc = med(rc) # sorted now: v[1] the least, v[n] the most
				printf "%-10s %5s %8.3f %8.3f %8.3f\n", a, "med", ms, mg, mc
				printf "%-10s %5s %8s %8s %8s\n", a, "range", sprintf("%.2f-%.2f", rs[1], rs[n]), sprintf("%.2f-%.2f", rg[1], rg[n]), sprintf("%.2f-%.2f", rc[1], rc[n])
				if (n < 5 || rs[n] - rs[1] > 0.10 || rc[n] - rc[1] > 0.10)
					printf "%-10s: %d pairs, spread of SET %.0f%%, of CPU %.0f%%: a 5%% difference is not decided by these rounds (more rounds, a quieter machine)\n", a, n, 100 * (rs[n] - rs[1]), 100 * (rc[n] - rc[1])
			}' "$W/runs.txt" "$W/runs.txt"
	done
fi
[ -f "$W/stalloc-stats.txt" ] && { echo; head -5 "$W/stalloc-stats.txt"; }

# 3. a workload that fragments on purpose: fill, delete 90%, refill with other sizes
[ "$FRAG" = 1 ] || exit 0
echo
echo "== fill $KEYS keys of $SIZE bytes, delete 90% of them, refill with $KEYS keys of 300 bytes"
printf '%-9s %12s %12s %12s %12s\n' alloc fill_RSS/used del_RSS/used refill_RSS/used refill_RSSMiB
V300=$(head -c 300 /dev/zero | tr '\0' v)
DEL="local n = 0 for i = 0, $KEYS - 1 do if i % 10 ~= 0 then n = n + redis.call('del', string.format('key:%012d', i)) end end return n"
for a in $ALLOCS; do
	start "$a" || continue
	redis-benchmark -p $PORT -q -c 50 -n $((KEYS * 2)) -r "$KEYS" -d "$SIZE" -t set >/dev/null 2>&1
	f=$(awk -v e="$(rss_kb $pid)" -v u="$(used)" 'BEGIN {printf "%.3f", e * 1024 / u}')
	redis-cli -p $PORT eval "$DEL" 0 >/dev/null
	sleep 1; redis-cli -p $PORT ping >/dev/null
	d=$(awk -v e="$(rss_kb $pid)" -v u="$(used)" 'BEGIN {printf "%.3f", e * 1024 / u}')
	redis-benchmark -p $PORT -q -c 50 -n $((KEYS * 2)) -r "$KEYS" set "other:__rand_int__" "$V300" >/dev/null 2>&1
	sleep 1; redis-cli -p $PORT ping >/dev/null
	e=$(rss_kb $pid)
	g=$(awk -v e="$e" -v u="$(used)" 'BEGIN {printf "%.3f", e * 1024 / u}')
	printf '%-9s %12s %12s %12s %12.1f\n' "$a" "$f" "$d" "$g" "$(echo "$e / 1024" | bc -l)"
	stop "$pid"
	sleep 0.5
done

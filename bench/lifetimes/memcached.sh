#!/bin/bash
# bench/lifetimes/memcached.sh - Debian's memcached (4 worker threads) under
# memcslap (libmemcached-tools) with each allocator side by side, as
# redis.sh does for Redis: glibc, jemalloc, mimalloc, tcmalloc (preloaded)
# and libstalloc's lifetime heap with a model learned from a recorded run.
#
#   bench/lifetimes/memcached.sh [BUILD]     env: CONC (50), EXEC (4000), LOAD (40000), REPEAT (3)
#
# memcached keeps items in slab pages of its own (1 MiB, from malloc, never
# freed) and its connections' buffers in malloc: the allocator shapes the
# connections' share.  Prints memcslap's time, the server's CPU seconds, RSS
# and STAT bytes (the items' bytes) 2 s after memcslap ended.
set -u
B=${1:-build}
S=$(cd "$B" && pwd)/stprof
LIB=$(cd "$B" && pwd)/libstalloc.so
CONC=${CONC:-50} EXEC=${EXEC:-4000} LOAD=${LOAD:-40000} REPEAT=${REPEAT:-3}
ALLOCS=${ALLOCS:-"glibc jemalloc mimalloc tcmalloc stalloc stalloc-4k"}
W=${OUT:-$(mktemp -d /tmp/stprof-lt-memcached.XXXXXX)}
mkdir -p "$W"
LIBDIR=/usr/lib/x86_64-linux-gnu
command -v memcached >/dev/null && command -v memcslap >/dev/null ||
	{ echo "memcached.sh: memcached and memcslap are needed (scripts/deps.sh bench)" >&2; exit 2; }
PORT=$((11400 + RANDOM % 500))
MARGS="-u root -p $PORT -U 0 -m 1024 -t 4"
stat() { printf 'stats\r\nquit\r\n' | timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; cat >&3; cat <&3" 2>/dev/null | tr -d '\r' | sed -n "s/^STAT $1 //p"; }
up() { for _ in $(seq 100); do [ -n "$(stat pid)" ] && return 0; sleep 0.1; done; echo "memcached.sh: no server" >&2; return 1; }
start() {
	case $1 in
	glibc) env LD_PRELOAD=$LIB memcached $MARGS & ;;
	jemalloc) env LD_PRELOAD=$LIBDIR/libjemalloc.so.2 memcached $MARGS & ;;
	mimalloc) env LD_PRELOAD=$LIBDIR/libmimalloc.so.2 memcached $MARGS & ;;
	tcmalloc) env LD_PRELOAD=$LIBDIR/libtcmalloc_minimal.so.4 memcached $MARGS & ;;
	stalloc) "$S" run -q --plan "$W/mc.lt" --stalloc-stats "$W/stalloc-stats.txt" -- memcached $MARGS & ;;
	stalloc-4k) STALLOC_HUGEPAGES=0 "$S" run -q --plan "$W/mc.lt" -- memcached $MARGS & ;;
	record) "$S" record -q -o "$2" -- memcached $MARGS & ;;
	esac
	pid=$!
	up
}
slap() { memcslap --servers=127.0.0.1:$PORT --concurrency="$CONC" --execute-number="$1" --initial-load="$LOAD" 2>&1 | sed -n 's/.*Time total: *\([0-9.]*\) seconds.*/\1/p'; }
echo "== learning: two recorded runs of memcslap --concurrency=$CONC --execute-number=$((EXEC / 4))"
for t in train test; do
	start record "$W/$t.stp" || exit 1
	slap $((EXEC / 4)) >/dev/null
	kill -TERM $pid; wait $pid 2>/dev/null
done
"$S" plan --lifetimes -q "$W/train.stp" -o "$W/mc.lt" || exit 1
"$S" plan --lifetimes "$W/train.stp" -o "$W/mc.lt" --test "$W/test.stp" | sed -n '1,6p'
printf '\n%-9s %5s %9s %7s %9s %9s %9s\n' alloc round slap_s cpu_s RSSMiB itemsMiB RSS/items
for r in $(seq "$REPEAT"); do
	echo "-- round $r, load $(cut -d' ' -f1-3 /proc/loadavg)"
	for a in $ALLOCS; do
		start "$a" || continue
		c0=$(awk '{print $14 + $15}' /proc/$pid/stat)
		t=$(slap "$EXEC")
		c1=$(awk '{print $14 + $15}' /proc/$pid/stat)
		sleep 2
		rk=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
		by=$(stat bytes)
		awk -v a=$a -v r=$r -v t="$t" -v c=$(( c1 - c0 )) -v hz=$(getconf CLK_TCK) -v e="$rk" -v b="$by" \
			'BEGIN {printf "%-9s %5d %9.2f %7.2f %9.1f %9.1f %9.3f\n", a, r, t, c / hz, e / 1024, b / 1048576, e * 1024 / b}'
		kill -TERM $pid; wait $pid 2>/dev/null
		sleep 0.5
	done
done
[ -f "$W/stalloc-stats.txt" ] && { echo; head -6 "$W/stalloc-stats.txt"; }

#!/bin/sh
# bench/lifetimes/run.sh - make bench's figures for docs/lifetimes.md:
#   1. bench/lifetimes/fragment.c (fill, free the temporaries, refill with
#      other sizes; a tenth of the fill kept for good) under each allocator,
#      and under libstalloc with a model learned from a shorter run of it;
#   2. redis.sh: Debian's redis-server under redis-benchmark, every
#      allocator side by side (a few minutes; REDIS=0 skips it);
#   3. memcached.sh: Debian's memcached under memcslap (MEMCACHED=0 skips).
set -u
B=${STPROF_BUILD:-build}
S=${STPROF_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
LIBDIR=/usr/lib/x86_64-linux-gnu
W=$(mktemp -d /tmp/stprof-lt-frag.XXXXXX)
trap 'rm -rf "$W"' EXIT
echo "-- fragment: 4 rounds of 400,000 temporaries (1 in 10 kept), refill with 1-4 KiB objects; load $(cut -d' ' -f1-3 /proc/loadavg)"
"$B/stprof" record -q -o "$W/f.stp" -- "$B/lt_fragment" 1 100000 >/dev/null
"$B/stprof" plan --lifetimes -q "$W/f.stp" -o "$W/f.lt"
for a in glibc jemalloc mimalloc tcmalloc stalloc; do
	case $a in
	glibc) pre="" ;;
	jemalloc) pre=$LIBDIR/libjemalloc.so.2 ;;
	mimalloc) pre=$LIBDIR/libmimalloc.so.2 ;;
	tcmalloc) pre=$LIBDIR/libtcmalloc_minimal.so.4 ;;
	esac
	if [ $a = stalloc ]; then
		out=$("$B/stprof" run -q --plan "$W/f.lt" -- "$B/lt_fragment" 4 400000)
	else
		out=$(env ${pre:+LD_PRELOAD=$pre} "$B/lt_fragment" 4 400000)
	fi
	printf '%-9s %s\n' "$a" "$(echo "$out" | tail -1)"
done
[ "${REDIS:-1}" = 1 ] && "$S/bench/lifetimes/redis.sh" "$B"
[ "${MEMCACHED:-1}" = 1 ] && "$S/bench/lifetimes/memcached.sh" "$B"
exit 0

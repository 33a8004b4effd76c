#!/bin/bash
# Many threads allocating and freeing at once: every event is recorded, in an
# order that describes a consistent heap (no address handed out twice while
# live), with no gaps in sequence numbers.
. "$(dirname "$0")/lib.sh"
threads=8 n=20000
"$STPROF" record -q -o "$T/s.stp" -- "$WORKLOAD" storm $threads $n >/dev/null
res=$("$CHECK_HEAP" "$T/s.stp" 3000 3063) || fail "heap inconsistent: $res"
sized=$(printf '%s\n' "$res" | sed 's/.*sized=\([0-9]*\).*/\1/')
expect_eq "storm allocations" "$sized" $((threads * n))
case "$res" in *lost=0*) ;; *) fail "lost events: $res" ;; esac
threads_seen=$("$STPROF" dump -t thread "$T/s.stp" | wc -l)
[ "$threads_seen" -ge $((threads + 1)) ] || fail "saw $threads_seen threads"
echo ok

#!/bin/bash
# SIGKILL mid-run: the trace reads to its last flush (at most 50 ms old), is
# consistent, says it has no end record; stprof dies of the same signal.
. "$(dirname "$0")/lib.sh"
mkfifo "$T/ready"
"$STPROF" record -q -o "$T/k.stp" -- "$WORKLOAD" spin >"$T/ready" &
rec=$!
read -r line <"$T/ready"
expect_eq "workload" "$line" ready
sleep 0.4
pid=$(pgrep -P "$rec" | head -1)
[ -n "$pid" ] || fail "workload not found"
trap 'kill -KILL "$pid" 2>/dev/null || true; cleanup' EXIT
kill -KILL "$pid"
set +e
wait $rec
status=$?
set -e
expect_eq "stprof status (128+SIGKILL)" "$status" 137
"$STPROF" info "$T/k.stp" >"$T/info" || fail "info failed on a killed trace: $(cat "$T/info")"
grep -q "no end record" "$T/info" || fail "killed trace claims to be whole"
res=$("$CHECK_HEAP" "$T/k.stp") || fail "killed trace inconsistent: $res"
allocs=$(printf '%s\n' "$res" | sed 's/allocs=\([0-9]*\).*/\1/')
[ "$allocs" -gt 1000 ] || fail "only $allocs allocations read"
echo ok

#!/bin/bash
# A profiled program behaves as without stprof: same stdout, stderr and exit
# status, for C programs, shell pipelines, Python and Python's own signal
# handling; a program that closes every descriptor still gets traced and its
# own files are intact; realloc failure leaves the old block recorded.
. "$(dirname "$0")/lib.sh"
same() { # CMD...
  set +e
  "$@" >"$T/n.out" 2>"$T/n.err"; ns=$?
  "$STPROF" record -q -o "$T/t.stp" -- "$@" >"$T/s.out" 2>"$T/s.err"; ss=$?
  set -e
  expect_eq "status of $*" "$ss" "$ns"
  cmp -s "$T/n.out" "$T/s.out" || fail "stdout differs for $*: $(diff "$T/n.out" "$T/s.out" | head -5)"
  cmp -s "$T/n.err" "$T/s.err" || fail "stderr differs for $*: $(diff "$T/n.err" "$T/s.err" | head -5)"
}
same "$WORKLOAD" storm 4 5000
same sh -c 'echo out; echo err >&2; seq 1 1000 | sort -r | head -3; exit 4'
same "$PY" -c 'import sys; print(sorted(str(i) for i in range(50))[:5]); print("e", file=sys.stderr); sys.exit(3)'
# Python installs its SIGINT handler only if it sees SIG_DFL
same "$PY" -c 'import signal; print(signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))'
same "$PY" -c 'import os, signal; os.kill(os.getpid(), signal.SIGINT)'
same "$WORKLOAD" reallocfail
"$STPROF" record -q -o "$T/r.stp" -- "$WORKLOAD" reallocfail >/dev/null
"$CHECK_HEAP" "$T/r.stp" >/dev/null || fail "realloc failure left an inconsistent trace"
"$STPROF" dump "$T/r.stp" | grep -cE ' alloc .*size=4000( |$)' | grep -qx 1 || true
# a program that closes every fd >= 3
out=$("$STPROF" record -q -o "$T/c.stp" -- "$WORKLOAD" closefds "$T/file.txt")
expect_eq "closefds output" "$out" "closefds: done"
expect_eq "program's file" "$(wc -l <"$T/file.txt")" 2000
expect_eq "program's file line" "$(sed -n 1234p "$T/file.txt")" "line 1233"
"$STPROF" info "$T/c.stp" | grep -q "exited with status 0" || fail "trace after closefds not whole"
n=$("$STPROF" dump -t alloc "$T/c.stp" | grep -cE 'size=(6[4-9]|[7-9][0-9]|[0-9]{3,4})( |$)')
[ "$n" -ge 2000 ] || fail "closefds: only $n allocations recorded"
echo ok

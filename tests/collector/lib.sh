# lib.sh - shared by the collector test scripts (sourced).
# Provides: STPROF, WORKLOAD, CHECK_HEAP, a scratch dir T (removed on exit),
# fail MSG, expect_eq WHAT GOT WANT, skip MSG (exit 77).
set -eu
: "${STPROF_BUILD:?run through ctest}"
STPROF="$STPROF_BUILD/stprof"
WORKLOAD="$STPROF_BUILD/collector_workload"
CHECK_HEAP="$STPROF_BUILD/check_heap"
PY="${STPROF_PYTHON:-/usr/bin/python3}"
T=$(mktemp -d)
# on exit: stop anything a test left running, then remove the scratch dir
cleanup() { for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null || true; done; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
# field NAME LINE: the value of NAME=... in a dump line
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }

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
# hang_watch SECS: should the test still run after SECS, write the
# processes it started and their threads' stacks (gdb, when installed) to
# stderr, so that a hang met on a CI machine says where it was.  Returns at
# once; the exit trap stops the watcher.
hang_watch() {
	(
		# the sleep holds none of the test's pipes: killed, the watcher
		# leaves nothing that keeps ctest waiting
		sleep "$1" </dev/null >/dev/null 2>&1
		echo "HANG? the test still runs after $1 s; its processes:" >&2
		kids=$(ps -eo pid=,ppid= | awk -v root=$$ '{ up[$1] = $2 }
			END { for (p in up) { q = p; while (q in up && q != root && q > 1) q = up[q]; if (q == root) print p } }')
		for p in $kids; do ps -o pid=,ppid=,stat=,etime=,args= -p "$p" >&2 || true; done
		command -v gdb >/dev/null || exit 0
		for p in $kids; do
			case "$(cat /proc/"$p"/comm 2>/dev/null)" in python*|stprof|redis*) ;; *) continue ;; esac
			echo "== the stacks of $p" >&2
			timeout 60 gdb -p "$p" -batch -ex "thread apply all bt 30" 2>&1 | grep -E '^(#|Thread)' >&2 || true
		done
	) &
}

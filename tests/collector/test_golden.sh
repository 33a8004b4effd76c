#!/bin/bash
# A recorded trace of a deterministic program is the same event for event
# as the golden one in tests/collector/golden/ (made by the collector before
# it was split into a core and backends): seq, type and every field of every
# event, with times, ids and addresses renamed by golden/normalize.py, and
# what `stprof info` says of the trace's end and definitions.  The programs
# cover the host heap (every interposed function, markers, fork + exec,
# threads, _exit, a fatal signal), PyTorch's CUDA tensors both ways (the
# stand-in libcudart) and, where it is built, the Compute Sanitizer backend
# on its fake device.
#
# STPROF_GOLDEN_UPDATE=1 writes the goldens instead (after a change that is
# meant to change traces: say so in the commit).
. "$(dirname "$0")/lib.sh"
# the sanitizers' runtimes add modules and allocations of their own: the
# goldens are of the plain build
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "goldens are of the build without sanitizers"
G="$STPROF_SRC/tests/collector/golden"
DRV="$STPROF_BUILD/torch_cuda_driver"
SZ="$STPROF_BUILD/sz_fake_program"
cd "$T"

# run NAME CMD...: records CMD into NAME.stp and prints the normalized dumps
# of every trace it made (the first image's, then its children's by name).
run() {
	local name=$1
	shift
	"$STPROF" record -q ${RECORD_OPTS:-} -o "$name.stp" -- "$@" >"$name.out" 2>"$name.err" || true
	local traces=("$name.stp")
	for f in $(ls "$name.stp".* 2>/dev/null | sort); do traces+=("$f"); done
	local dumps=()
	for f in "${traces[@]}"; do
		"$STPROF" dump -s "$f" >"$f.dump" || fail "$name: dump $f"
		dumps+=("$f.dump")
	done
	"$PY" "$G/normalize.py" "$STPROF_BUILD" "${dumps[@]}"
	for f in "${traces[@]}"; do
		"$STPROF" info "$f" | grep -E '^(events|whole|strings|stack nodes|threads|modules):' |
			sed "s/^/info $(basename "$f" | sed 's/\.stp\.[0-9]*/.stp.PID/'): /"
	done
}

check() {
	local name=$1
	shift
	run "$name" "$@" >"$name.got"
	if [ "${STPROF_GOLDEN_UPDATE:-0}" = 1 ]; then
		cp "$name.got" "$G/$name.txt"
		echo "updated $G/$name.txt"
		return
	fi
	[ -f "$G/$name.txt" ] || fail "no golden $G/$name.txt"
	diff -u "$G/$name.txt" "$name.got" >"$name.diff" || { head -40 "$name.diff" >&2; fail "$name: the trace differs from the golden"; }
}

check basic "$WORKLOAD" basic
check fork "$WORKLOAD" fork
check storm "$WORKLOAD" storm 1 300
check exit "$WORKLOAD" _exit 3
check segv "$WORKLOAD" segv
LD_LIBRARY_PATH="$STPROF_BUILD/fakecuda" check torch_pluggable "$DRV" pluggable
check torch_caching "$DRV" caching
if [ -x "$SZ" ]; then
	STPROF_SANITIZER_LIB="$STPROF_BUILD/libsz_fake_device.so" RECORD_OPTS=--accesses=exact \
		check sanitizer_known "$SZ" known
fi
echo ok

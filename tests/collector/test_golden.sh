#!/bin/bash
# A recorded trace of a deterministic program is the same event for event
# as the golden one in tests/collector/golden/ (made by the collector before
# it was split into a core and backends): seq, type and every field of every
# event, with times, ids and addresses renamed by golden/normalize.py, and
# what `stprof info` says of the trace's end and definitions.  The programs
# cover the host heap (every interposed function, markers, fork + exec,
# threads, _exit, a fatal signal), PyTorch's CUDA tensors both ways (the
# stand-in libcudart) and, where they are built, the Compute Sanitizer
# backend on its fake device and the CUPTI backend on tests/cuda's stand-in
# driver.
#
# STPROF_GOLDEN_UPDATE=1 writes the goldens instead (after a change that is
# meant to change traces: say so in the commit); STPROF_LIB may name the
# collector to make them with.
. "$(dirname "$0")/lib.sh"
# the sanitizers' runtimes add modules and allocations of their own: the
# goldens are of the plain build
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "goldens are of the build without sanitizers"
G="$STPROF_SRC/tests/collector/golden"
# The dynamic loader keeps a malloc'd copy of every library path it opens
# (LD_LIBRARY_PATH, dlopen), so the build folder's name would change those
# allocations' sizes (49 B under build/, 55 B under build-check/).  The
# programs and libraries are reached through a link of fixed length instead.
L=$(mktemp -d /tmp/stprof-golden.XXXXXX)
ln -s "$STPROF_BUILD" "$L/b"
SB="$L/b"
trap 'rm -rf "$L"; cleanup' EXIT
DRV="$SB/torch_cuda_driver"
SZ="$SB/sz_fake_program"
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
	"$PY" "$G/normalize.py" "$SB" "${dumps[@]}"
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
LD_LIBRARY_PATH="$SB/fakecuda" check torch_pluggable "$DRV" pluggable
check torch_caching "$DRV" caching
if [ -x "$SZ" ]; then
	STPROF_SANITIZER_LIB="$SB/libsz_fake_device.so" RECORD_OPTS=--accesses=exact \
		check sanitizer_known "$SZ" known
fi
# the CUPTI backend on tests/cuda's stand-in driver (where nvcc built
# cuda_prog): device objects, copies, sets, kernels held for their device
# time; then with --accesses=exact, where the Compute Sanitizer backend
# claims the launches, copies and sets and CUPTI keeps the allocations
CUDA_PROG="$SB/tests/cuda/cuda_prog"
if [ -x "$CUDA_PROG" ]; then
	export CUDA_PROG_VERIFY=1
	LD_LIBRARY_PATH="$SB/tests/cuda/fake" check cupti "$CUDA_PROG"
	if [ -x "$SZ" ]; then
		LD_LIBRARY_PATH="$SB/tests/cuda/fake" STPROF_SANITIZER_LIB="$SB/libsz_fake_device.so" \
			RECORD_OPTS=--accesses=exact check cupti_exact "$CUDA_PROG"
	fi
fi
echo ok

#!/bin/sh
# test_cupti.sh - the CUPTI backend end to end, without a GPU: the real CUDA
# C program tests/cuda/cuda_prog.cu (built by nvcc) runs against the fake
# driver (fake/: libcuda, libcudart, libcupti; device memory is host memory)
# under the real collector.  Checks: the same output and exit status as
# without stprof; exactly the expected CUDA objects, segments, kernel object
# references (one past an object's end does not count), copies, sets and
# syncs with call paths and device times joined from the activity records
# (check_cuda_trace --fake); report and export run on it and show device
# memory; --no-cuda records none; a CUPTI held by another tool gives one
# stderr line and a run without CUDA events.
. "$(dirname "$0")/../collector/lib.sh"
[ -x "${CUDA_PROG:-}" ] || skip "cuda_prog not built (no nvcc)"
export LD_LIBRARY_PATH="$FAKE_CUDA_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_PROG_VERIFY=1

"$CUDA_PROG" >"$T/native.out" 2>"$T/native.err" || fail "cuda_prog fails natively: $(cat "$T/native.err")"
CUDA_PROG_ADDRS="$T/addrs" "$STPROF" record -o "$T/p.stp" -- "$CUDA_PROG" >"$T/rec.out" 2>"$T/rec.err" ||
	fail "recorded cuda_prog failed: $(cat "$T/rec.err")"
cmp -s "$T/native.out" "$T/rec.out" || fail "output differs under stprof"
grep -q "stprof: CUDA" "$T/rec.err" && fail "unexpected CUDA message: $(cat "$T/rec.err")"
"$CHECK_CUDA_TRACE" --fake "$T/p.stp" "$T/addrs" || { "$STPROF" dump "$T/p.stp" | grep -v MODULE >&2; fail "check_cuda_trace"; }

# the runtime gives no parameter info: the driver launch inside it is scanned
FAKE_NO_RT_PARAMINFO=1 CUDA_PROG_ADDRS="$T/addrs2" "$STPROF" record -q -o "$T/p2.stp" -- "$CUDA_PROG" >/dev/null 2>&1 ||
	fail "recorded cuda_prog failed (no runtime parameter info)"
"$CHECK_CUDA_TRACE" --fake "$T/p2.stp" "$T/addrs2" >/dev/null || fail "check_cuda_trace without runtime parameter info"

# the libcupti of another 13.x release (PyTorch's wheel beside its
# libcudart): its records are read all the same (the fields read sit at the
# same offsets in every record version); one of another major is not
FAKE_CUPTI_VERSION=130000 CUDA_PROG_ADDRS="$T/addrs4" "$STPROF" record -o "$T/p4.stp" -- "$CUDA_PROG" \
	>/dev/null 2>"$T/p4.err" || fail "recorded cuda_prog failed (CUPTI 13.0)"
grep -q "stprof: CUDA" "$T/p4.err" && fail "CUPTI 13.0: $(cat "$T/p4.err")"
"$CHECK_CUDA_TRACE" --fake "$T/p4.stp" "$T/addrs4" >/dev/null || fail "no device times with CUPTI 13.0"
FAKE_CUPTI_VERSION=28 CUDA_PROG_ADDRS="$T/addrs4" "$STPROF" record -o "$T/p5.stp" -- "$CUDA_PROG" \
	>/dev/null 2>"$T/p5.err" || fail "recorded cuda_prog failed (CUPTI 12.9)"
grep -q "no activity records from this libcupti" "$T/p5.err" || fail "CUPTI 12.9: no message: $(cat "$T/p5.err")"
"$CHECK_CUDA_TRACE" "$T/p5.stp" "$T/addrs4" >/dev/null || fail "check_cuda_trace with CUPTI 12.9"

# launch callbacks without symbolName (CUPTI promises it only for the
# launch calls its headers name): the kernels are named all the same
FAKE_NO_SYMBOL=1 CUDA_PROG_ADDRS="$T/addrs7" "$STPROF" record -q -o "$T/p7.stp" -- "$CUDA_PROG" \
	>/dev/null 2>&1 || fail "recorded cuda_prog failed (no symbolName)"
"$CHECK_CUDA_TRACE" --fake "$T/p7.stp" "$T/addrs7" >/dev/null || fail "kernels unnamed without symbolName"

# runtime launch callbacks without functionParams (__cudaLaunchKernel has
# no parameter structure in CUPTI's headers), with and without symbolName:
# kernels recorded from the driver launch inside (name, stream, objects)
for nosym in 0 1; do
	FAKE_NO_LAUNCH_PARAMS=1 FAKE_NO_SYMBOL=$nosym CUDA_PROG_ADDRS="$T/addrs8" "$STPROF" record -q -o "$T/p8.stp" \
		-- "$CUDA_PROG" >/dev/null 2>&1 || fail "recorded cuda_prog failed (no launch parameters)"
	"$CHECK_CUDA_TRACE" --fake "$T/p8.stp" "$T/addrs8" >/dev/null ||
		fail "kernels lost without launch parameters (FAKE_NO_SYMBOL=$nosym)"
done

# --accesses=exact: the Compute Sanitizer backend (its fake here, which
# reports nothing) records the launches, copies and sets; CUPTI records the
# allocations and syncs only, so no launch is recorded twice
FAKE_SZ="$STPROF_BUILD/libsz_fake_device.so"
if [ -r "$FAKE_SZ" ]; then
	STPROF_SANITIZER_LIB="$FAKE_SZ" STPROF_SANITIZER_PATCH="$FAKE_SZ" CUDA_PROG_ADDRS="$T/addrs9" \
		"$STPROF" record -q --accesses=exact -o "$T/p9.stp" -- "$CUDA_PROG" >/dev/null 2>&1 ||
		fail "recorded cuda_prog failed (--accesses=exact)"
	"$STPROF" dump "$T/p9.stp" >"$T/p9.txt"
	grep -q 'name="stprof.sanitizer" value=1' "$T/p9.txt" || fail "--accesses=exact: sanitizer fake not started"
	n=$(grep -c "kind=kernel\|kind=memcpy\|kind=memset" "$T/p9.txt" || true)
	expect_eq "CUPTI launch/copy/set events under --accesses=exact" "$n" 0
	n=$(grep -c "kind=sync" "$T/p9.txt" || true)
	[ "$n" -gt 0 ] || fail "--accesses=exact: CUPTI recorded no syncs"
	n=$(grep -c " alloc .*kind=device" "$T/p9.txt" || true)
	[ "$n" -gt 0 ] || fail "--accesses=exact: CUPTI recorded no device objects"
	# call paths begin at the program's frames: each cudaMalloc at its own
	# line of main, no frame of the sanitizer's or the driver's shown
	"$STPROF" report -n 20 "$T/p9.stp" 2>/dev/null | sed -n '/^Top call sites/,/^$/p' >"$T/sites9.txt"
	for l in 105 107 109 111; do
		grep -q "^      at main (cuda_prog.cu:$l)$" "$T/sites9.txt" ||
			fail "--accesses=exact: cudaMalloc of line $l: $(cat "$T/sites9.txt")"
	done
	grep -q "cuda_runtime.h\|libcuda\|libsz_\|sanitizer\|no line of the program" "$T/sites9.txt" &&
		fail "--accesses=exact: framework frames shown: $(cat "$T/sites9.txt")"
fi

# the records come before the EXIT callback of the call that made them (a
# fast kernel, a flush on another thread): joined all the same
FAKE_ACTIVITY_EARLY=1 CUDA_PROG_ADDRS="$T/addrs6" "$STPROF" record -q -o "$T/p6.stp" -- "$CUDA_PROG" \
	>/dev/null 2>&1 || fail "recorded cuda_prog failed (early records)"
"$CHECK_CUDA_TRACE" --fake "$T/p6.stp" "$T/addrs6" >/dev/null || fail "no device times when records come early"

# activity records that never come, or none asked for: the held events are
# written at the end with the calls' host times, the trace reads whole
for v in FAKE_NO_ACTIVITY STPROF_CUDA_ACTIVITY; do
	val=1; [ "$v" = STPROF_CUDA_ACTIVITY ] && val=0
	env "$v=$val" CUDA_PROG_ADDRS="$T/addrs3" "$STPROF" record -q -o "$T/p3.stp" -- "$CUDA_PROG" >/dev/null 2>&1 ||
		fail "recorded cuda_prog failed ($v=$val)"
	"$CHECK_CUDA_TRACE" "$T/p3.stp" "$T/addrs3" >/dev/null || fail "check_cuda_trace with $v=$val"
	"$CHECK_CUDA_TRACE" --fake "$T/p3.stp" "$T/addrs3" >/dev/null 2>&1 && fail "device durations with $v=$val"
	rm -f "$T/p3.stp"
done

# four threads at once: every held event written, in sequence, device-timed
CUDA_PROG_THREADS=4 "$STPROF" record -q -o "$T/t.stp" -- "$CUDA_PROG" >/dev/null 2>&1 || fail "threads run failed"
"$STPROF" info "$T/t.stp" >"$T/t.info" 2>&1 || fail "info on the threads trace: $(cat "$T/t.info")"
grep -q "lost" "$T/t.info" && grep -v " 0 lost\|lost 0\|lost: 0" "$T/t.info" | grep -q "lost" && fail "events lost: $(cat "$T/t.info")"
n=$("$STPROF" dump "$T/t.stp" | grep -c "kind=memset name=\"cudaMemsetAsync\".*duration=3000" || true)
expect_eq "device-timed memsets of 4 threads + main" "$n" 201
n=$("$STPROF" dump "$T/t.stp" | grep -c "kind=memcpy name=\"cudaMemcpyAsync\".*duration=3000" || true)
expect_eq "device-timed copies of 4 threads + main" "$n" 201
tids=$("$STPROF" dump "$T/t.stp" | awk '/kind=memset/ { print $3 }' | sort -u | wc -l)
expect_eq "threads with memsets" "$tids" 5

# report and export read it, and show the device memory
"$STPROF" report "$T/p.stp" >"$T/report.txt" 2>&1 || fail "report: $(tail -3 "$T/report.txt")"
grep -qi "device" "$T/report.txt" || fail "report names no device memory: $(head -30 "$T/report.txt")"
# each cudaMalloc at its own line of main (the runtime's inline template
# cudaMalloc<float> from cuda_runtime.h folded away: its caller's line shows)
"$STPROF" report -n 20 "$T/p.stp" 2>/dev/null | sed -n '/^Top call sites/,/^$/p' >"$T/sites.txt"
for l in 105 107 109 111; do
	grep -q "^      at main (cuda_prog.cu:$l)$" "$T/sites.txt" || fail "cudaMalloc of line $l: $(cat "$T/sites.txt")"
done
grep -q "cuda_runtime.h\|libcuda\|no line of the program" "$T/sites.txt" && fail "framework frames shown: $(cat "$T/sites.txt")"
"$STPROF" export "$T/p.stp" -o "$T/p.pftrace" >/dev/null 2>&1 || fail "export failed"
[ -s "$T/p.pftrace" ] || fail "export wrote nothing"
"$STPROF" lint-perfetto "$T/p.pftrace" >/dev/null 2>&1 || fail "lint-perfetto on the export"
"$STPROF" dump "$T/p.stp" | grep -q "kind=kernel name=\"_Z5scale" || fail "dump shows no scale kernel"

# --no-cuda: no device events
"$STPROF" record -q --no-cuda -o "$T/n.stp" -- "$CUDA_PROG" >/dev/null 2>&1 || fail "--no-cuda run failed"
n=$("$STPROF" dump "$T/n.stp" | grep -c "kind=device\|kind=kernel" || true)
expect_eq "--no-cuda device events" "$n" 0

# another tool holds CUPTI: one line, the program runs on, no device events
FAKE_CUPTI_BUSY=1 "$STPROF" record -o "$T/b.stp" -- "$CUDA_PROG" >"$T/b.out" 2>"$T/b.err" || fail "busy run failed"
cmp -s "$T/native.out" "$T/b.out" || fail "output differs when CUPTI is busy"
n=$(grep -c "another tool .* already holds CUPTI" "$T/b.err" || true)
expect_eq "busy CUPTI message lines" "$n" 1
n=$("$STPROF" dump "$T/b.stp" | grep -c "kind=device\|kind=kernel" || true)
expect_eq "busy CUPTI device events" "$n" 0

# -q silences it
FAKE_CUPTI_BUSY=1 "$STPROF" record -q -o "$T/q.stp" -- "$CUDA_PROG" >/dev/null 2>"$T/q.err" || fail "quiet run failed"
[ ! -s "$T/q.err" ] || fail "-q printed: $(cat "$T/q.err")"
echo "test_cupti: ok"

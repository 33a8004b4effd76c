#!/bin/sh
# check_30_cupti.sh - the CUPTI backend on a real GPU (tests/gpu/run.sh sets
# S, B, T, CUDA).  tests/cuda/cuda_prog.cu, built by nvcc against the real
# runtime (the build's cuda_prog target), is recorded with `stprof record`
# (CUDA on by default: the driver calls the collector's InitializeInjection)
# and its trace must hold exactly the expected events (check_cuda_trace:
# objects with kind, device and pool, the VMM mapping as a segment, the four
# kernels' object references, copies and sets with directions, syncs, call
# paths starting in cuda_prog, device times inside the recording).  The
# program checks its own results (CUDA_PROG_VERIFY=1).  Then report and
# export run on the trace, and the cost of `stprof record --cuda` on this
# program is printed as the ratio of median wall times (7 runs each) to the
# program run natively.
set -eu
P="$B/tests/cuda/cuda_prog"
CHK="$B/check_cuda_trace"
[ -x "$P" ] || { echo "check_30: $P was not built (nvcc, CUPTI headers?)"; exit 1; }
[ -x "$CHK" ] || { echo "check_30: $CHK was not built"; exit 1; }
export LD_LIBRARY_PATH="$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_PROG_VERIFY=1

"$P" >"$T/native.out"
CUDA_PROG_ADDRS="$T/addrs" "$B/stprof" record --cuda -o "$T/p.stp" -- "$P" >"$T/rec.out" 2>"$T/rec.err" || {
	cat "$T/rec.err"; echo "check_30: recorded run failed"; exit 1; }
cat "$T/rec.err"
cmp -s "$T/native.out" "$T/rec.out" || { echo "check_30: output differs under stprof"; exit 1; }
if ! "$CHK" "$T/p.stp" "$T/addrs"; then
	"$B/stprof" dump "$T/p.stp" | grep -v " module \| thread " | head -80
	echo "check_30: the trace is not what was expected"
	exit 1
fi
"$B/stprof" report "$T/p.stp" 2>&1 | sed -n '1,16p'
"$B/stprof" export "$T/p.stp" -o "$T/p.pftrace" >/dev/null
"$B/stprof" lint-perfetto "$T/p.pftrace" >/dev/null

# overhead: median of 7 wall times, native and recorded
ns() { date +%s%N; }
median() { sort -n | sed -n 4p; }
: >"$T/nat"; : >"$T/rec"
for i in 1 2 3 4 5 6 7; do
	t0=$(ns); "$P" >/dev/null; t1=$(ns); echo $((t1 - t0)) >>"$T/nat"
	t0=$(ns); "$B/stprof" record -q --cuda -o "$T/o.stp" -- "$P" >/dev/null; t1=$(ns); echo $((t1 - t0)) >>"$T/rec"
done
nat=$(median <"$T/nat"); rec=$(median <"$T/rec")
awk -v n="$nat" -v r="$rec" 'BEGIN { printf "check_30: cuda_prog native %.1f ms, stprof record --cuda %.1f ms: %.2fx\n", n / 1e6, r / 1e6, r / n }'

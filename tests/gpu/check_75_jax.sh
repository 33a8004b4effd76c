#!/bin/sh
# check_75_jax.sh - a JAX program on a GPU under stprof (docs/jax.md): the
# MLP of tests/jax/jax_train.py (width 4096, 30 steps, an eval every 10),
# natively and under `stprof record`, with XLA's default allocator (BFC,
# preallocating 75%).
#   - the same loss, the same live arrays (count, bytes) after every step
#     and the same XLA num_allocs and peak_bytes_in_use at the end (the
#     shim leaves the program's allocations alone; when only XLA's figures
#     differ, a second native run tells whether they vary without stprof);
#   - JAX's buffers are device memory of device 0 in pool 2, and the
#     trace's JAX space holds exactly the bytes of JAX's live arrays after
#     every step (30 points);
#   - the report's allocator section for that device: XLA's BFC as run
#     against XLA's own memory_stats() samples (the error line is printed),
#     the XLA_PYTHON_CLIENT_* advice;
#   - XLA's own device allocations (its BFC region) are the device's
#     segments, not objects: the device space's peak is the buffers'
#     (printed with the segment count);
#   - a device memory profile saved by the program imports as device 0's
#     buffers, as many and as large as the live buffers it printed.
# Prints the wall time of both runs and the ratio.  JAXPY picks the Python
# with JAX and its CUDA plugin (default: PY).  Run by tests/gpu/run.sh (S,
# B, T, PY set).
set -eu
JP=${JAXPY:-$PY}
TRAIN="$S/tests/jax/jax_train.py"
if ! "$JP" -c 'import jax, sys; sys.exit(jax.devices()[0].platform != "gpu")' 2>/dev/null; then
	echo "  FAIL: no JAX with a GPU for $JP (set JAXPY)"
	exit 1
fi
"$JP" -c 'import jax, jaxlib; print("  jax", jax.__version__, "jaxlib", jaxlib.__version__, jax.devices()[0].device_kind)'
ARGS="--steps 30 --width 4096 --eval 10 --live"
now() { date +%s.%N; }
t0=$(now)
# a run that dies says which one, how, and where (Python's faulthandler
# prints the Python stack of a fatal signal; on an H200 with jax 0.11.2 one
# of these two died of SIGSEGV before anything said which: tests/gpu/jax_diag.sh
# tells the parts of stprof apart)
died() {
	echo "  FAIL: the $1 run died (status $2): $(grep -v '^ *$' "$3" | tail -8 | cut -c1-160 | tr '\n' '|')"
	exit 1
}
export PYTHONFAULTHANDLER=1
st=0; "$JP" "$TRAIN" $ARGS --check >"$T/native.txt" 2>"$T/native.err" || st=$?
[ "$st" = 0 ] || died native "$st" "$T/native.err"
t1=$(now)
st=0; "$B/stprof" record -q -o "$T/j.stp" -- "$JP" "$TRAIN" $ARGS --check >"$T/rec.txt" 2>"$T/rec.err" || st=$?
[ "$st" = 0 ] || died recorded "$st" "$T/rec.err"
t2=$(now)
echo "  native: $(tail -1 "$T/native.txt"); $(tail -2 "$T/native.txt" | head -1)"
echo "  stprof: $(tail -1 "$T/rec.txt"); $(tail -2 "$T/rec.txt" | head -1)"
grep -q '^xla num_allocs ' "$T/native.txt" || { echo "  FAIL: no memory_stats() on the device"; exit 1; }
# the loss and the live arrays after every step must be the same
if ! cmp -s "$T/native.txt" "$T/rec.txt"; then
	if ! diff "$T/native.txt" "$T/rec.txt" | grep -q '^[<>] [^x]'; then
		# only XLA's line differs: XLA's autotuner may pick other kernels
		# (other scratch) from run to run; a second native run tells
		"$JP" "$TRAIN" $ARGS --check >"$T/native2.txt"
		echo "  native again: $(tail -1 "$T/native2.txt")"
		if cmp -s "$T/native.txt" "$T/native2.txt"; then
			echo "  FAIL: XLA's allocations differ under stprof (and not between native runs)"
			exit 1
		fi
		echo "  (XLA's figures vary between native runs too: not compared)"
	else
		diff "$T/native.txt" "$T/rec.txt" | head -6 | sed 's/^/  /'
		echo "  FAIL: the loss or the live arrays differ under stprof"
		exit 1
	fi
fi
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "  wall: native %.2f s, stprof record %.2f s (%.2fx)\n", b - a, c - b, (c - b) / (b - a) }'

"$B/stprof" dump "$T/j.stp" >"$T/d.txt"
n=$(grep ' alloc ' "$T/d.txt" | grep -c 'pool=2' || true)
ndev=$(grep ' alloc ' "$T/d.txt" | grep 'pool=2' | grep -c 'kind=device device=0 ' || true)
echo "  JAX buffers: $n allocations, $ndev of them device memory of device 0"
[ "$n" -gt 0 ] && [ "$n" = "$ndev" ] || { echo "  FAIL: JAX's buffers are not device 0's"; exit 1; }
if ! python3 "$S/tests/python/check_bytes.py" "$T/d.txt" 2 jax_bytes >"$T/cb.txt"; then
	grep MISMATCH "$T/cb.txt" | head -5
	echo "  FAIL: the JAX space's bytes differ from JAX's live arrays"
	exit 1
fi
echo "  JAX space = JAX's live arrays at $(wc -l <"$T/cb.txt") points; last: $(tail -1 "$T/cb.txt")"
segs=$(grep -c ' segment_reserve .*device=0' "$T/d.txt" || true)
xla=$(grep -c 'name="xla\.bytes_in_use:' "$T/d.txt" || true)
echo "  device 0 segments (XLA's own allocations): $segs; memory_stats samples: $xla"

"$B/stprof" report --no-progress --models-detail "$T/j.stp" >"$T/r.txt" 2>&1
grep -E '^Memory \(|^  peak ' "$T/r.txt" | sed 's/^/  /'
sed -n '/^Fragmentation (JAX buffers, device 0/,/^Worst moment/p' "$T/r.txt" | sed 's/^/  /'
sed -n '/^XLA_PYTHON_CLIENT_\* settings/,/^$/p' "$T/r.txt" | sed 's/^/  /'
grep -q "^  actual (XLA's statistics, [0-9]* samples)" "$T/r.txt" || { echo "  FAIL: no XLA statistics in the report"; exit 1; }
grep -q "^  model error vs actual: " "$T/r.txt" || { echo "  FAIL: no model error line"; exit 1; }

"$JP" "$TRAIN" --steps 3 --width 4096 --profile "$T/mem.prof" >"$T/p.txt"
live=$(sed -n 's/^live //p' "$T/p.txt")
"$B/stprof" import "$T/mem.prof" -o "$T/mem.stp" >"$T/i.txt"
sed 's/^/  /' "$T/i.txt"
grep -q "^  ${live% *} allocations, ${live#* } bytes on 1 device" "$T/i.txt" ||
	{ echo "  FAIL: the profile's buffers are not the program's ($live)"; exit 1; }
[ "$("$B/stprof" dump "$T/mem.stp" | grep ' alloc ' | grep -vc 'kind=device device=0 ' || true)" = 0 ] ||
	{ echo "  FAIL: the profile's buffers are not device 0's"; exit 1; }
echo "  device memory profile: ${live% *} buffers, ${live#* } bytes on device 0"

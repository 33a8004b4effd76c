#!/bin/sh
# check_80_long_run.sh - a long GPU training run under the default recording
# (docs/record.md, "Host heap" and "Long runs"): the small GPT of gpt.py on
# CUDA, its optimizer steps timed from inside (bench/python/step_times.py).
#   overhead:  3 alternating rounds of native and `stprof record` (300
#              iterations); the medians' ratios: the loop (the steps after
#              the first two) at most 1.10x, the whole run (`import torch`
#              included) at most 1.15x; memray --native beside them when
#              installed (printed only);
#   folding:   the 300-iteration trace has at least 290 folded iterations,
#              its tensor peak (report JSON, device tensors) equals
#              torch.cuda.max_memory_allocated(), the losses are native's;
#   size:      trace bytes per steady iteration (300 against 100 iterations)
#              at most 1 KiB, and a 10,000-step run extrapolated under 1 GB.
# Run by tests/gpu/run.sh (S, B, T, PY, CUDA set).
set -eu
echo "  a small GPT on CUDA, 300 iterations: loop overhead, folding, trace bytes per iteration"
cp "$S/tests/gpu/gpt.py" "$T/gpt.py"
W="$S/bench/python/step_times.py"
N=300
# CHECK80_ROUNDS=K: K alternating rounds instead of 3 (a short device lease)
ROUNDS=$(seq 1 "${CHECK80_ROUNDS:-3}")
fail=0
# the step_times line's field K of run output ERR
st() { sed -n "s/^step_times .*\b$2=\([0-9.]*\).*/\1/p" "$1"; }
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
MEMRAY=$(command -v memray || true)
for r in $ROUNDS; do
	"$PY" "$W" "$T/gpt.py" "$T/n.json" $N >"$T/n.out" 2>"$T/n$r.err"
	"$B/stprof" record -q -o "$T/d.stp" -- "$PY" "$W" "$T/gpt.py" "$T/d.json" $N >"$T/d.out" 2>"$T/d$r.err"
	[ -z "$MEMRAY" ] || "$MEMRAY" run -q -f --native -o "$T/m.bin" "$W" "$T/gpt.py" "$T/m.json" $N >/dev/null 2>"$T/m$r.err"
done
cmp -s "$T/n.out" "$T/d.out" || { echo "FAIL: losses differ under stprof"; diff "$T/n.out" "$T/d.out" | head -4; fail=1; }
for k in loop wall; do
	n=$(for r in $ROUNDS; do st "$T/n$r.err" $k; done | med)
	d=$(for r in $ROUNDS; do st "$T/d$r.err" $k; done | med)
	lim=1.10
	[ $k = loop ] || lim=1.15
	line=$(awk -v n="$n" -v d="$d" -v l=$lim -v k=$k 'BEGIN { printf "%s: native %.3f s, stprof %.3f s: %.3fx (at most %s)", k, n, d, d / n, l }')
	if [ -n "$MEMRAY" ]; then
		m=$(for r in $ROUNDS; do st "$T/m$r.err" $k; done | med)
		line="$line; memray --native $(awk -v n="$n" -v m="$m" 'BEGIN { printf "%.3fx", m / n }')"
	fi
	echo "  $line"
	awk -v n="$n" -v d="$d" -v l=$lim 'BEGIN { exit !(d <= l * n) }' || { echo "FAIL: $k overhead above ${lim}x"; fail=1; }
done
folded=$("$B/stprof" info "$T/d.stp" | sed -n 's/^folded: *\([0-9]*\) steady.*/\1/p')
echo "  folded: ${folded:-0} of $N iterations; trace $(stat -c %s "$T/d.stp") bytes"
[ "${folded:-0}" -ge 290 ] || { echo "FAIL: fewer than 290 iterations folded"; "$B/stprof" report "$T/d.stp" | grep -A4 '^Iterations'; fail=1; }
tp=$("$B/stprof" report --format json "$T/d.stp" | "$PY" -c '
import json, sys
# a device space: PyTorch's caching allocator's blocks are its pool 1
# (pool_peak_bytes), what other libraries took with cudaMalloc is apart
print(max([s.get("pool_peak_bytes", s["peak_bytes"]) for s in json.load(sys.stdin)["spaces"]
           if s.get("kind") == "device"] or [0]))')
ma=$("$PY" -c "import json; print(json.load(open('$T/d.json'))['max_allocated'])")
echo "  tensor peak $tp (max_memory_allocated $ma)"
[ "$tp" = "$ma" ] || { echo "FAIL: the folded trace's tensor peak $tp != max_memory_allocated $ma"; fail=1; }
"$B/stprof" record -q -o "$T/s.stp" -- "$PY" "$W" "$T/gpt.py" "$T/s.json" 100 >/dev/null 2>&1
a=$(stat -c %s "$T/s.stp") b=$(stat -c %s "$T/d.stp")
per=$(((b - a) / (N - 100)))
echo "  trace: 100 iterations $a bytes, $N iterations $b bytes: $per bytes per steady iteration;" \
	"10,000 steps: about $(((a + per * 9900) / 1048576)) MiB"
[ "$per" -le 1024 ] || { echo "FAIL: a steady iteration adds $per bytes (at most 1 KiB)"; fail=1; }
[ $((a + per * 9900)) -lt 1073741824 ] || { echo "FAIL: a 10,000-step run would not fit in 1 GB"; fail=1; }
exit $fail

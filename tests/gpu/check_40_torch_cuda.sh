#!/bin/sh
# check_40_torch_cuda.sh - PyTorch on CUDA recorded both ways (docs/python.md,
# "CUDA tensors"): a small GPT trained for 20 iterations, natively and under
# `stprof record --torch-cuda=caching` and `--torch-cuda=pluggable`.
#   caching:   the trace's tensor peak (device 0, pool 1) equals the run's
#              torch.cuda.max_memory_allocated() and its reserved peak (the
#              segment events) max_memory_reserved(); `stprof report` prints
#              the PyTorch model's simulated M_r against the real one, which
#              must agree within 1%; the losses are the native run's.
#   pluggable: the tensor peak equals the native run's requested-bytes peak
#              (memory_stats()["requested_bytes.all.peak"]: the same requests,
#              unrounded; a pluggable allocator has no memory_stats), the
#              losses are the native run's, and tensors carry Python lines.
# Prints the wall time of each run and the ratio to native (target for
# caching: 1.3x at most; printed, not enforced: one run's timing).
# Run by tests/gpu/run.sh (S, B, T, PY, CUDA set).
set -eu
echo "  a small GPT in PyTorch, recorded with --torch-cuda=caching and =pluggable"
cp "$S/tests/gpu/gpt.py" "$T/gpt.py"
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }
jget() { "$PY" -c "import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print('' if v is None else v)" "$1" "$2"; }
# tensor peak (device 0, pool 1), reserved peak (segment events) of a trace,
# the count and bytes of device allocations outside pool 1 (other libraries'
# own cudaMalloc: cuBLAS's handle workspaces, 64 MiB each on an H100), and
# how many of those start where a live segment or tensor does (PyTorch's own
# segments, or the pluggable allocator's cudaMalloc, recorded a second time
# by the CUPTI backend: must be 0)
peaks() {
	"$B/stprof" dump -t alloc -t free -t segment_reserve -t segment_release "$1" | awk '
	{ type = $4; size = 0; dev = ""; pool = ""; addr = ""; kind = ""
	  for (i = 5; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "size") size = kv[2];
	    else if (kv[1] == "device") dev = kv[2]; else if (kv[1] == "pool") pool = kv[2];
	    else if (kv[1] == "addr") addr = kv[2]; else if (kv[1] == "kind") kind = kv[2] }
	  if (kind != "device" || dev != "0") next
	  if (type == "alloc" && pool != "1") { nother++; other += size; if ((addr in seg) || (addr in live)) twice++ }
	  if (type == "alloc" && pool == "1") { live[addr] = size; cur += size; if (cur > peak) peak = cur }
	  else if (type == "free" && pool == "1" && (addr in live)) { cur -= live[addr]; delete live[addr] }
	  else if (type == "segment_reserve") { seg[addr] = 1; res += size; if (res > rpeak) rpeak = res }
	  else if (type == "segment_release") { delete seg[addr]; res -= size } }
	END { printf "%d %d %d %d %d\n", peak, rpeak, nother, other, twice }'
}
fail=0

t0=$(now); "$PY" "$T/gpt.py" "$T/native.json" >"$T/native.out"; t1=$(now)
native=$(calc "$t1 - $t0")
echo "  native: $(tail -1 "$T/native.out"); wall ${native}s, loop $(jget "$T/native.json" loop_s)s"
echo "    max_memory_allocated $(jget "$T/native.json" max_allocated), max_memory_reserved $(jget "$T/native.json" max_reserved), requested peak $(jget "$T/native.json" requested_peak)"

# ---- (b) the caching allocator kept
t0=$(now); "$B/stprof" record -q --torch-cuda=caching -o "$T/b.stp" -- "$PY" "$T/gpt.py" "$T/b.json" >"$T/b.out"; t1=$(now)
wall_b=$(calc "$t1 - $t0")
cmp -s "$T/native.out" "$T/b.out" || { echo "FAIL: caching: losses differ from native"; diff "$T/native.out" "$T/b.out" | head -4; fail=1; }
set -- $(peaks "$T/b.stp")
tp=$1 rp=$2
echo "  caching: $3 device allocations ($4 bytes) by other libraries (cuBLAS's workspaces, ...)"
[ "$5" = 0 ] || { echo "FAIL: caching: $5 of them at a segment's or a tensor's address: recorded twice"; fail=1; }
ma=$(jget "$T/b.json" max_allocated) mr=$(jget "$T/b.json" max_reserved)
echo "  caching: tensor peak $tp (max_memory_allocated $ma), reserved peak $rp (max_memory_reserved $mr)"
[ "$tp" = "$ma" ] || { echo "FAIL: caching: tensor peak $tp != max_memory_allocated $ma"; fail=1; }
[ "$rp" = "$mr" ] || { echo "FAIL: caching: reserved peak $rp != max_memory_reserved $mr"; fail=1; }
"$B/stprof" report "$T/b.stp" >"$T/b.report" 2>&1 || { echo "FAIL: stprof report"; fail=1; }
# the report's figures add up on a real GPU trace (docs/report.md, "Self-check"),
# and its segments hold its tensors (no "efficiency not given")
"$B/stprof" report --check "$T/b.stp" 2>&1 | sed 's/^/    /'
"$B/stprof" report --check "$T/b.stp" >/dev/null 2>&1 || { echo "FAIL: caching: the report's figures do not add up"; fail=1; }
grep -q "efficiency not given" "$T/b.report" && { echo "FAIL: caching: tensors outside the recorded segments: $(grep -A1 'efficiency not given' "$T/b.report")"; fail=1; }
sed -n '/^Fragmentation (device 0/,/model error vs actual/p' "$T/b.report" | sed 's/^/    /'
err=$(sed -n 's/.*model error vs actual: M_a \([-+0-9.]*\)%, M_r \([-+0-9.]*\)%.*/\2/p' "$T/b.report" | head -1)
if [ -z "$err" ]; then
	echo "FAIL: the report prints no simulated-vs-actual comparison"; fail=1
elif ! awk -v e="$err" 'BEGIN { exit !(e <= 1 && e >= -1) }'; then
	echo "FAIL: the PyTorch model's M_r is ${err}% off the real one (target 1%)"; fail=1
else
	echo "  simulated M_r vs real: ${err}% (target within 1%)"
fi
echo "  caching: wall ${wall_b}s, loop $(jget "$T/b.json" loop_s)s; ratio to native: wall $(calc "$wall_b / $native")x, loop $(calc "$(jget "$T/b.json" loop_s) / $(jget "$T/native.json" loop_s)")x (target <= 1.3x)"

# ---- (a) STAlloc's profiling mode: libstprof.so as the pluggable allocator
t0=$(now); "$B/stprof" record -q --torch-cuda=pluggable -o "$T/a.stp" -- "$PY" "$T/gpt.py" "$T/a.json" >"$T/a.out" 2>"$T/a.err"; t1=$(now)
wall_a=$(calc "$t1 - $t0")
grep -q "torch-cuda=pluggable" "$T/a.err" && { echo "FAIL: pluggable not installed: $(cat "$T/a.err")"; fail=1; }
cmp -s "$T/native.out" "$T/a.out" || { echo "FAIL: pluggable: losses differ from native"; diff "$T/native.out" "$T/a.out" | head -4; fail=1; }
set -- $(peaks "$T/a.stp")
tp=$1
[ "$5" = 0 ] || { echo "FAIL: pluggable: $5 device allocations at a tensor's address: the allocator's own cudaMalloc recorded"; fail=1; }
want=$(jget "$T/native.json" requested_peak)
echo "  pluggable: tensor peak $tp (native requested-bytes peak $want; max_memory_allocated here: $(jget "$T/a.json" max_allocated))"
[ "$tp" = "$want" ] || { echo "FAIL: pluggable: tensor peak $tp != native requested peak $want"; fail=1; }
"$B/stprof" report "$T/a.stp" 2>&1 | grep -q "at gpt.py:[0-9]* in " || { echo "FAIL: pluggable: no Python lines for the tensors"; fail=1; }
"$B/stprof" report --check "$T/a.stp" >/dev/null 2>&1 || { echo "FAIL: pluggable: the report's figures do not add up: $("$B/stprof" report --check "$T/a.stp" 2>&1 | head -5)"; fail=1; }
echo "  pluggable: wall ${wall_a}s, loop $(jget "$T/a.json" loop_s)s; ratio to native: wall $(calc "$wall_a / $native")x"
exit $fail

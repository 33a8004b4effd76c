#!/bin/bash
# CUDA tensors carry their Python line in both --torch-cuda modes, whatever
# the threading (collector/core/pylayout.c): tests/python/fake_cuda_lines.py
# hands tensors to the collector as PyTorch does (the caching allocator's
# report under its lock, the pluggable allocator's alloc), from Python
# threads that do not hold the GIL while another Python thread keeps
# taking it.  Before frames were read in place, the caching mode's tensors
# had no Python line at all (the collector may not wait for the GIL under
# the allocator's lock).  Every device tensor's folded path starts at its
# line; the program ends as natively.  A tensor made during a backward pass on
# a thread with no Python (autograd's device thread on a GPU) points at the
# line that started the backward, or, once the node of a module's output
# said so, at the line that called the module.
. "$(dirname "$0")/lib.sh"
P="$STPROF_SRC/tests/python/fake_cuda_lines.py"
"$PY" -c 'import ctypes' 2>/dev/null || skip "no python"
export LD_LIBRARY_PATH="$STPROF_BUILD/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for mode in caching pluggable; do
	out=$(timeout 120 "$STPROF" record -q -o "$T/$mode.stp" -- "$PY" "$P" "$mode" 2>&1) || fail "$mode: $out"
	expect_eq "$mode output" "$out" "done $mode"
	n=$("$STPROF" dump "$T/$mode.stp" | grep -c ' alloc .*kind=device.* pool=1')
	expect_eq "$mode: device tensors" "$n" "$([ $mode = pluggable ] && echo 14 || echo 12)"
	"$STPROF" report -n 10 "$T/$mode.stp" >"$T/$mode.txt" 2>&1 || fail "$mode: report"
	sed -n '/^Top call sites/,/^$/p' "$T/$mode.txt" >"$T/$mode.sites"
	grep -q "at fake_cuda_lines.py:[0-9]* in make" "$T/$mode.sites" && grep -q "<- fake_cuda_lines.py:[0-9]* in forward_pass" "$T/$mode.sites" ||
		fail "$mode: the forward tensors have no line: $(cat "$T/$mode.sites")"
	grep -q "<- fake_cuda_lines.py:[0-9]* in side_thread" "$T/$mode.sites" ||
		fail "$mode: the side thread's tensors have no line: $(cat "$T/$mode.sites")"
	grep -q "no line of the program" "$T/$mode.sites" && fail "$mode: sites without a line: $(cat "$T/$mode.sites")"
done
# a backward's tensor made on a thread with no Python: at the line that
# started the backward, marked as backward
grep -q "at fake_cuda_lines.py:[0-9]* in loss_backward (backward)" "$T/pluggable.sites" ||
	fail "the device thread's backward tensor: $(cat "$T/pluggable.sites")"
# one made after a module's node said so (the shim's pre-hook, run on that
# thread): at the line that called the module, as the module's backward
ml=$(grep -n "# module line" "$P" | cut -d: -f1)
grep -q "at fake_cuda_lines.py:$ml in forward_hook (backward of blocks.0.mlp)" "$T/pluggable.sites" ||
	fail "the module's backward tensor: $(cat "$T/pluggable.sites")"
echo ok

#!/bin/sh
# check_43_oom_models.sh - an out-of-memory error fragmentation makes, on a
# GPU, and the allocator models' answer checked against PyTorch itself
# (docs/allocator-models.md, "A request refused at run time").  The
# caching allocator is capped at 256 MiB (set_per_process_memory_fraction):
# two 100 MiB tensors, freed (cached); two 60 MiB ones split them; a 70 MiB
# request then fits in no cached block and no new segment: refused by the
# allocator itself (its oom report, interposed: a REFUSED event at the
# line, after the cache flush), though 120 MiB live + 70 fit in the 200 MiB
# it holds.  The report's models say the as-run allocator refuses it too
# and expandable_segments:True serves it; the same script under
# PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, run without stprof,
# must then serve it.  Run by tests/gpu/run.sh (S, B, T, PY, CUDA set).
set -eu
echo "  a fragmentation OOM: refused at its line, the models' fix checked natively"
cat >"$T/frag.py" <<'PY'
import torch
M = 1 << 20
torch.cuda.set_per_process_memory_fraction(256 * M / torch.cuda.get_device_properties(0).total_memory)
x = torch.empty(100 * M, dtype=torch.uint8, device="cuda")
q = torch.empty(100 * M, dtype=torch.uint8, device="cuda")
del x, q
y = torch.empty(60 * M, dtype=torch.uint8, device="cuda")
z = torch.empty(60 * M, dtype=torch.uint8, device="cuda")
try:
    w = torch.empty(70 * M, dtype=torch.uint8, device="cuda")  # line 10
    print("served")
except torch.OutOfMemoryError:
    print("refused")
print("reserved", torch.cuda.memory_reserved() // M, "MiB")
PY
"$PY" "$T/frag.py" >"$T/native.out" 2>&1 || { echo "  native run failed: $(tail -3 "$T/native.out")"; exit 1; }
echo "  natively: $(tr '\n' ' ' <"$T/native.out")"
grep -q refused "$T/native.out" || { echo "  natively the request was served: the script no longer fragments"; exit 1; }
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "$PY" "$T/frag.py" >"$T/exp.out" 2>&1 ||
	{ echo "  expandable run failed: $(tail -3 "$T/exp.out")"; exit 1; }
echo "  natively, expandable_segments:True: $(tr '\n' ' ' <"$T/exp.out")"
"$B/stprof" record -q -o "$T/f.stp" -- "$PY" "$T/frag.py" >"$T/f.out" || { echo "  the run failed"; cat "$T/f.out"; exit 1; }
cmp -s "$T/f.out" "$T/native.out" || { echo "  output differs under stprof: $(cat "$T/f.out")"; exit 1; }
"$B/stprof" report "$T/f.stp" >"$T/f.txt"
grep -A3 '^  refused' "$T/f.txt" | sed 's/^/  /'
sed -n '/^The request refused/,/^Worst/p' "$T/f.txt" | sed 's/^/  /'
grep -q "^  refused   1 request for want of memory; the first asked for 70.0 MiB" "$T/f.txt" ||
	{ echo "  not one 70 MiB request refused"; exit 1; }
grep -q "at frag.py:10 in <module>" "$T/f.txt" || { echo "  the refusal's line is not frag.py:10"; exit 1; }
grep -q "^  pytorch  *refuses it too" "$T/f.txt" || { echo "  the as-run model does not agree with the run"; exit 1; }
if grep -q "PYTORCH_ALLOC_CONF=expandable_segments:True it serves it" "$T/f.txt"; then
	grep -q served "$T/exp.out" || { echo "  the models' fix does not serve it natively"; exit 1; }
else
	echo "  the models name no fix"
	grep -q served "$T/exp.out" && { echo "  though expandable segments serve it natively"; exit 1; }
fi

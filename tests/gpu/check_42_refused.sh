#!/bin/sh
# check_42_refused.sh - an out-of-memory error on a GPU, caught, recorded
# (docs/record.md, "Refused requests"): a batch-size finder on CUDA asks for
# 4x the device's memory in one tensor, catches torch.OutOfMemoryError,
# then trains 5 steps at a batch that fits.  PyTorch's caching allocator's
# cudaMalloc is refused (CUPTI sees it fail with cudaErrorMemoryAllocation),
# it frees its cache and asks again, refused again: REFUSED events of the
# device's tensor pool (pool 1), the allocator's attempts (requested 0,
# the bytes it asked cudaMalloc for), then its oom report
# (c10::reportOutOfMemoryToProfiler, interposed): the request refused, with
# the Python line; the report's "refused" line names one request, not its
# attempts; the run goes on and its 5 steps are recorded.
# Run by tests/gpu/run.sh (S, B, T, PY, CUDA set).
set -eu
echo "  a refused CUDA allocation, caught: REFUSED events at the line that asked"
cat >"$T/oom.py" <<'PY'
import torch
total = torch.cuda.get_device_properties(0).total_memory
model = torch.nn.Linear(1024, 1024).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
try:
    x = torch.empty(4 * total // 4, dtype=torch.float32, device="cuda")  # 4x the device
except torch.OutOfMemoryError:
    print("refused")
for _ in range(5):
    loss = model(torch.randn(64, 1024, device="cuda")).square().mean()
    opt.zero_grad(); loss.backward(); opt.step()
torch.cuda.synchronize()
print("trained")
PY
"$B/stprof" record -q -o "$T/o.stp" -- "$PY" "$T/oom.py" >"$T/o.out" || { echo "  the run failed"; cat "$T/o.out"; exit 1; }
grep -q refused "$T/o.out" && grep -q trained "$T/o.out" || { echo "  output: $(cat "$T/o.out")"; exit 1; }
"$B/stprof" dump -t refused "$T/o.stp" >"$T/r.txt"
n=$(grep -c 'kind=device device=0 .*pool=1' "$T/r.txt" || true)
echo "  REFUSED events of cuda:0's tensor pool: $n ($(head -1 "$T/r.txt" | sed 's/.* size=\([0-9]*\).*/\1/') bytes the first)"
[ "$n" -ge 1 ] || { echo "  none: $(cat "$T/r.txt")"; exit 1; }
"$B/stprof" report "$T/o.stp" >"$T/o.txt"
grep -A1 '^  refused' "$T/o.txt" | sed 's/^/  /'
grep -q "^            with .* at oom.py:6 in <module>" "$T/o.txt" || { echo "  the refusal's line is not oom.py:6"; exit 1; }
grep -q "^  refused   1 request for want of memory" "$T/o.txt" || { echo "  not one request refused"; exit 1; }
a=$(grep -c 'requested=0 kind=device device=0 .*pool=1' "$T/r.txt" || true)
echo "  the allocator's attempts: $a (PyTorch's: one, and one more after freeing its cache)"
grep -q "^Iterations: 5 " "$T/o.txt" || { echo "  $(grep '^Iterations' "$T/o.txt")"; exit 1; }

#!/bin/sh
# check_25_stalloc_torch_plan.sh - a PyTorch GPU training run with its own
# plan enforced (docs/stalloc.md, "PyTorch on a GPU"):
#   1. natively, PyTorch's caching allocator: losses, max_memory_reserved(),
#      the device's total memory;
#   2. recorded with `--torch-cuda=pluggable` (one cudaMalloc per tensor, at
#      its requested size, which is what libstalloc later sees);
#   3. `stprof plan` of that trace (a device plan), no options;
#   4. `stprof run --plan`: the shim installs libstalloc.so as PyTorch's
#      CUDAPluggableAllocator, every tensor is matched against the plan.
# (enforce_plan, tests/gpu/plan_lib.sh).  Checks: the plan is a device
# plan; identical losses; libstalloc's peak reserved within 1% of the
# plan's pool, and within 1% of what the plan's replay predicted.  Prints peak reserved against the
# default caching allocator's and the OOM margin of each (device total
# minus peak reserved).  Run by tests/gpu/run.sh (S, B, T, PY, CUDA set).
set -eu
echo "  a transformer trained with its own device plan enforced by libstalloc"
cat >"$T/train.py" <<'PYEOF'
import json, sys, torch
import torch.nn as nn
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = False
layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
model = nn.Sequential(nn.Embedding(1000, 256), nn.TransformerEncoder(layer, num_layers=4), nn.Linear(256, 1000)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.randint(0, 1000, (12, 32, 65), device="cuda")
for it in range(12):
    x, y = data[it, :, :-1], data[it, :, 1:]
    loss = nn.functional.cross_entropy(model(x).reshape(-1, 1000), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    print(f"iter {it} loss {loss.item():.6f}")
torch.cuda.synchronize()
st = {"total": torch.cuda.mem_get_info()[1]}
try:
    st["max_reserved"] = torch.cuda.max_memory_reserved()
except Exception:
    st["max_reserved"] = None
json.dump(st, open(sys.argv[1], "w"))
PYEOF
. "$S/tests/gpu/plan_lib.sh"
fail=0
enforce_plan "$T/train.py"
pool=$(stat_of "$T/stats" pool) pr=$(stat_of "$T/stats" peak_reserved)
total=$(jget "$T/native.json" total) nres=$(jget "$T/native.json" max_reserved)
echo "  peak reserved: libstalloc $(mib "$pr") (pool $(mib "$pool")), PyTorch's caching allocator $(mib "$nres")"
echo "  OOM margin (device total $(mib "$total") minus peak reserved): libstalloc $(mib $((total - pr))), caching $(mib $((total - nres)))"
awk -v p="$pool" -v r="$pr" 'BEGIN { exit !(r <= 1.01 * p) }' || { echo "FAIL: peak reserved above 1.01 x pool"; fail=1; }
want=$(plan_said)
echo "  peak reserved / pool: $(awk -v p="$pool" -v r="$pr" 'BEGIN { printf "%.4f", r / p }'); the plan's replay said $want"
awk -v p="$pool" -v r="$pr" -v w="$want" 'BEGIN { d = r / p - w; exit !(d < 0.01 && d > -0.01) }' ||
	{ echo "FAIL: the run is not what the plan's replay said ($want x)"; fail=1; }
exit $fail

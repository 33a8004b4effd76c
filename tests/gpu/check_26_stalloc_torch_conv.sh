#!/bin/sh
# check_26_stalloc_torch_conv.sh - a second model on the GPU with its own
# device plan enforced (check_25 is a transformer): a residual conv net
# with batch norm, trained under bf16 autocast with SGD (momentum,
# Nesterov, weight decay) and 2 micro-batches of gradient accumulation,
# channels-last activations.  As check_25 (enforce_plan,
# tests/gpu/plan_lib.sh): native run (PyTorch's caching allocator),
# recorded with --torch-cuda=pluggable, `stprof plan` with no options,
# `stprof run --plan`.  Checks: a device plan; identical losses;
# peak reserved within 2% of the pool; the run meets the plan's own
# prediction (`stprof plan` replays the trace through libstalloc's
# allocator: its "at run time" ratio, within 1%).  Prints peak reserved
# against the caching allocator's.  Run by tests/gpu/run.sh (S, B, T, PY,
# CUDA set).
set -eu
echo "  a residual conv net (bf16 autocast, SGD, 2 micro-batches) with its device plan enforced"
cat >"$T/conv.py" <<'PYEOF'
import json, sys, torch
import torch.nn as nn, torch.nn.functional as F
dev = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

class Res(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); self.b2 = nn.BatchNorm2d(cout)
        self.sc = None if stride == 1 and cin == cout else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (x if self.sc is None else self.sc(x)))

model = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                      Res(64, 64, 1), Res(64, 128, 2), Res(128, 128, 1), Res(128, 256, 2), Res(256, 256, 1),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 100)).to(dev).to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
g = torch.Generator(device="cpu").manual_seed(1)
for step in range(10):
    opt.zero_grad(set_to_none=True)
    for mb in range(2):
        x = torch.randn(32, 3, 64, 64, generator=g).to(dev, memory_format=torch.channels_last)
        y = torch.randint(0, 100, (32,), generator=g).to(dev)
        with torch.autocast(device_type=dev, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y) / 2
        loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item() * 2:.5f}")
st = {}
if dev == "cuda":
    torch.cuda.synchronize()
    st["total"] = torch.cuda.mem_get_info()[1]
    try:
        st["max_reserved"] = torch.cuda.max_memory_reserved()
    except Exception:
        st["max_reserved"] = None
json.dump(st, open(sys.argv[1], "w"))
PYEOF
. "$S/tests/gpu/plan_lib.sh"
fail=0
enforce_plan "$T/conv.py"
pool=$(stat_of "$T/stats" pool) pr=$(stat_of "$T/stats" peak_reserved)
want=$(plan_said)
nres=$(jget "$T/native.json" max_reserved)
echo "  peak reserved: libstalloc $(mib "$pr") (pool $(mib "$pool"), $(awk -v p="$pool" -v r="$pr" 'BEGIN { printf "%.4f", r / p }') x; the plan said $want x), PyTorch's caching allocator $(mib "$nres")"
awk -v p="$pool" -v r="$pr" 'BEGIN { exit !(r <= 1.02 * p) }' || { echo "FAIL: peak reserved above 1.02 x pool"; fail=1; }
awk -v p="$pool" -v r="$pr" -v w="$want" 'BEGIN { d = r / p - w; exit !(d < 0.01 && d > -0.01) }' ||
	{ echo "FAIL: the run is not what the plan's replay said ($want x)"; fail=1; }
exit $fail

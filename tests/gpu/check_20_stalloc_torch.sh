#!/bin/sh
# check_20_stalloc_torch.sh - PyTorch on CUDA with libstalloc as its CUDAPluggableAllocator
# (no plan: the entry points pass through to cudaMalloc), against the default
# caching allocator: identical losses.
# Run by tests/gpu/run.sh, which sets S (source), B (build), T (scratch dir),
# PY (python) and CUDA (toolkit).  Prints what it measured; exits non-zero on
# the first failure.
set -eu
echo "  PyTorch with libstalloc as its CUDA allocator"
cat >"$T/train.py" <<'PYEOF'
import sys, torch
if sys.argv[1] == "stalloc":
    a = torch.cuda.memory.CUDAPluggableAllocator(sys.argv[2], "stalloc_torch_alloc", "stalloc_torch_free")
    torch.cuda.memory.change_current_allocator(a)
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
m = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()
opt = torch.optim.Adam(m.parameters(), 1e-3)
x = torch.randn(64, 256, device="cuda")
for i in range(20):
    loss = (m(x) - x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"iter {i} loss {loss.item():.6f}")
PYEOF
"$PY" "$T/train.py" default >"$T/default.out"
"$PY" "$T/train.py" stalloc "$B/libstalloc.so" >"$T/stalloc.out"
cmp "$T/default.out" "$T/stalloc.out" || { echo "FAIL: losses differ"; diff "$T/default.out" "$T/stalloc.out" | head; exit 1; }
tail -1 "$T/stalloc.out"

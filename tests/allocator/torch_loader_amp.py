"""torch_loader_amp.py - the input pipeline users run: a DataLoader with 2
worker processes (persistent, shuffled, batches collated in the workers),
bf16 autocast on the CPU, AdamW with gradients set to None, a few hundred
steps.  Not shaped for stprof: the default plan must hold it within 2% of
the pool (test_stalloc_loops.sh).  Usage: torch_loader_amp.py [STEPS]"""
import sys
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
X = torch.randn(4096, 64)
Y = (X[:, :8].sum(1) > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True, num_workers=2, drop_last=True,
                    persistent_workers=True)
model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = 0
while step < steps:
    for xb, yb in loader:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step % 50 == 0:
            print(step, f"{loss.item():.4f}")
        if step >= steps:
            break

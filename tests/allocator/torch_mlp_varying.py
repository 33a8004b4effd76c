"""torch_mlp_varying.py - an MLP trained with Adam on batches whose size
changes every step (64 to 88 rows, 2 accumulation steps, gradients set to
None, an LR schedule): the plan's size-varying requests are dynamic, served
from reusable space (test_stalloc_programs.sh)."""
import torch, torch.nn as nn
torch.manual_seed(3)
m = nn.Sequential(nn.Linear(100, 300), nn.Tanh(), nn.Dropout(0.1), nn.Linear(300, 300), nn.Tanh(), nn.Linear(300, 5))
opt = torch.optim.Adam(m.parameters(), lr=1e-3, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.StepLR(opt, 2)
for epoch in range(3):
    for step in range(4):
        x = torch.randn(64 + 8 * step, 100)
        t = torch.randn(64 + 8 * step, 5)
        for acc in range(2):
            loss = ((m(x[acc::2]) - t[acc::2]) ** 2).mean() / 2
            loss.backward()
        opt.step(); opt.zero_grad(set_to_none=True)
    sched.step()
    print(epoch, f"{loss.item():.6f}")

"""ckpt_train.py - blocks under non-reentrant activation checkpointing, 2
micro-batches, SGD, 40 steps (tests/python/test_checkpoint.sh)."""
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0)
class Block(nn.Module):
    def __init__(s, d):
        super().__init__(); s.a = nn.Linear(d, 4 * d); s.b = nn.Linear(4 * d, d)
    def forward(s, x):
        return x + s.b(F.gelu(s.a(x)))
class Net(nn.Module):
    def __init__(s, d=64, n=4):
        super().__init__(); s.blocks = nn.ModuleList(Block(d) for _ in range(n)); s.head = nn.Linear(d, 10)
    def forward(s, x):
        for b in s.blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return s.head(x)
m = Net(); opt = torch.optim.SGD(m.parameters(), lr=0.01)
for step in range(40):
    for mb in range(2):
        x = torch.randn(16, 32, 64)
        loss = F.cross_entropy(m(x).mean(1), torch.randint(0, 10, (16,)))
        (loss / 2).backward()
    opt.step(); opt.zero_grad()
print("loss %.4f" % loss.item())

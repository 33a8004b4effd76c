"""torch_gpt_ckpt.py - a GPT-style language model trained the way large
models are: every block under activation checkpointing
(torch.utils.checkpoint), AdamW with weight decay, 2 micro-batches per step
(gradient accumulation), gradient clipping and a cosine learning-rate
schedule; fresh random tokens each micro-batch.  Not shaped for stprof: the
default plan must hold it within 2% of the pool (test_stalloc_loops.sh).
Usage: torch_gpt_ckpt.py [STEPS]"""
import math, sys
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
torch.manual_seed(0)
V, D, H, L, T, B, MB = 256, 64, 4, 4, 32, 4, 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def attn(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).split(D, dim=2)
        q, k, v = (z.view(b, t, H, D // H).transpose(1, 2) for z in (q, k, v))
        a = (q @ k.transpose(-2, -1)) / math.sqrt(D // H)
        a = a.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, t, D))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, D), nn.Embedding(T, D)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, V, bias=False)
        self.head.weight = self.tok.weight
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = checkpoint(blk, x)
        return self.head(self.ln(x))


model = GPT()
decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
rest = [p for n, p in model.named_parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                        lr=3e-3, betas=(0.9, 0.95))
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / steps)))
for step in range(steps):
    opt.zero_grad(set_to_none=True)
    for mb in range(MB):
        idx = torch.randint(0, V, (B, T + 1))
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), idx[:, 1:].reshape(-1)) / MB
        loss.backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    print(step, f"{loss.item() * MB:.6f} {norm.item():.4f}")

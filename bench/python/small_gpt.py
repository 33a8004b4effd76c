#!/usr/bin/env python3
"""small_gpt.py [STEPS] - a GPT small enough that its training step on the
CPU is mostly per-operation overhead (width W, default 32: 4 blocks of 4
heads, sequences of 32, batches of 4, AdamW, one thread), as a GPU loop's
host side is: the loop bench/python/loop.sh times stprof's collector and
the shim's hooks on (docs/figures.md, "Long runs").  VARLEN=1: each step
takes a sequence length of 8 to 32 (drawn with a fixed seed), as unpadded
batches of text do."""
import os, sys, torch
import torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0); torch.set_num_threads(1)
D = int(os.environ.get("W", "32")); V, H, L, S, B = 256, 4, 4, 32, 4
class Block(nn.Module):
    def __init__(s):
        super().__init__(); s.ln1, s.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        s.qkv, s.proj = nn.Linear(D, 3*D), nn.Linear(D, D); s.fc, s.out = nn.Linear(D, 4*D), nn.Linear(4*D, D)
    def forward(s, x):
        b, t, _ = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(D, dim=2)
        q, k, v = (u.view(b, t, H, D//H).transpose(1, 2) for u in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (D//H) ** 0.5
        att = att.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, D)
        x = x + s.proj(y)
        return x + s.out(F.gelu(s.fc(s.ln2(x))))
class GPT(nn.Module):
    def __init__(s):
        super().__init__(); s.tok, s.pos = nn.Embedding(V, D), nn.Embedding(S, D)
        s.blocks = nn.ModuleList(Block() for _ in range(L)); s.ln, s.head = nn.LayerNorm(D), nn.Linear(D, V, bias=False)
    def forward(s, idx):
        x = s.tok(idx) + s.pos(torch.arange(idx.shape[1]))
        for b in s.blocks: x = b(x)
        return s.head(s.ln(x))
m = GPT(); opt = torch.optim.AdamW(m.parameters(), lr=3e-4)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
data = torch.randint(0, V, (N, B, S + 1))
lens = torch.randint(8, S + 1, (N,)).tolist() if os.environ.get("VARLEN") == "1" else [S] * N
for it in range(N):
    x, y = data[it, :, :lens[it]], data[it, :, 1:lens[it] + 1]
    loss = F.cross_entropy(m(x).view(-1, V), y.reshape(-1))
    opt.zero_grad(set_to_none=True); loss.backward(); opt.step()

"""gpt.py STATS.json [ITERS] - the small GPT the GPU checks train on CUDA
(tests/gpu/check_40_torch_cuda.sh, check_60_viewer.sh, check_65_lines.sh):
4 blocks of 256, sequences of 128, batches of 16, AdamW; prints each
iteration's loss and writes the loop's time and torch.cuda's peaks to
STATS.json.  The environment adds what training runs often use:
GPT_AMP=1 bf16 autocast, GPT_CKPT=1 activation checkpointing of every other
block, GPT_MICRO=N micro-batches per step (gradients accumulated);
GPT_DEVICE=cpu runs it on the CPU (tests/python/test_gpt_lines.sh), with
bf16 autocast on the CPU and no torch.cuda figures."""
import json, os, sys, time, torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0)
V, D, H, L, S, B = 2048, 256, 4, 4, 128, 16
AMP, CKPT = os.environ.get("GPT_AMP") == "1", os.environ.get("GPT_CKPT") == "1"
MICRO = int(os.environ.get("GPT_MICRO", "1"))
DEV = os.environ.get("GPT_DEVICE", "cuda")

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(b, s, H, D // H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (D // H) ** 0.5
        att = att.masked_fill(torch.triu(torch.ones(s, s, device=x.device, dtype=torch.bool), 1), float("-inf"))
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, D)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))

class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, D), nn.Embedding(S, D)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.ln, self.head = nn.LayerNorm(D), nn.Linear(D, V, bias=False)
    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for i, blk in enumerate(self.blocks):
            x = checkpoint(blk, x, use_reentrant=False) if CKPT and i % 2 else blk(x)
        return self.head(self.ln(x))

model = GPT().to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
ITERS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
data = torch.randint(0, V, (ITERS, B, S + 1), device=DEV)
torch.cuda.synchronize() if DEV == "cuda" else None
t0 = time.perf_counter()
for it in range(ITERS):
    x, y = data[it, :, :-1], data[it, :, 1:]
    for mb in range(MICRO):
        with torch.autocast(DEV, dtype=torch.bfloat16, enabled=AMP):
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, V), y.reshape(-1))
        if MICRO > 1:
            loss = loss / MICRO
        if mb == 0:
            opt.zero_grad(set_to_none=True)
        loss.backward()
    opt.step()
    print(f"iter {it} loss {loss.item():.6f}")
torch.cuda.synchronize() if DEV == "cuda" else None
loop = time.perf_counter() - t0
st = {"loop_s": loop}
for k, f in (("max_allocated", torch.cuda.max_memory_allocated), ("max_reserved", torch.cuda.max_memory_reserved)):
    try:
        st[k] = f()
    except Exception:
        st[k] = None
try:
    st["requested_peak"] = torch.cuda.memory_stats().get("requested_bytes.all.peak")
except Exception:
    st["requested_peak"] = None
json.dump(st, open(sys.argv[1], "w"))

"""torch_ddp.py - data-parallel training as a fleet runs it, one process per
rank under torchrun (gloo on the CPU): DistributedDataParallel (its
gradient buckets, rebuilt after the first backward), a DistributedSampler
feeding a DataLoader worker, a small transformer LM with every block under
activation checkpointing, 2 micro-batches a step, bf16 autocast, AdamW with
gradients set to None.  Not shaped for stprof.  Prints each rank's final
loss.  Usage: torchrun --nproc_per_node 2 torch_ddp.py [STEPS]"""
import sys
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

VOCAB, SEQ = 512, 64


class Tokens(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randint(0, VOCAB, (SEQ,), generator=g)
        x[24 + (i * 7) % 40:] = 0  # padded to SEQ
        return x


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.att = nn.MultiheadAttention(d, 4, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x):
        h = self.n1(x)
        x = x + self.att(h, h, h, need_weights=False)[0]
        return x + self.ff(self.n2(x))


class LM(nn.Module):
    def __init__(self, d=128, layers=3):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(layers))
        self.head = nn.Linear(d, VOCAB)

    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = checkpoint(b, h, use_reentrant=False)
        return self.head(h)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(LM())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = Tokens()
    loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data, seed=0), num_workers=1)
    step = 0
    for x in loader:
        for mb in x.chunk(2):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(mb[:, :-1])
            loss = nn.functional.cross_entropy(logits.float().reshape(-1, VOCAB), mb[:, 1:].reshape(-1)) / 2
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        if step == steps:
            break
    print(f"rank {dist.get_rank()} steps {step} loss {loss.item() * 2:.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

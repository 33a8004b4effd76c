"""threads_train.py - training as it is usually run, for Python lines
(tests/python/test_torch_lines.sh): a small vision transformer fed by a
DataLoader with two worker processes (the main process then runs its
feeder threads), a second Python thread that makes tensors of its own while
the loop runs, AdamW with a LambdaLR schedule, gradient clipping, and a
backward pass each step.  Every tensor the script makes should point at its
own line here, whatever thread made it."""
import sys
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
D, HEADS, LAYERS, PATCH, IMG, CLASSES = 96, 4, 3, 8, 32, 10


class Images(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, IMG, IMG, generator=g), i % CLASSES


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, D)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, D, PATCH, PATCH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(D, CLASSES)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x.mean(1))


stop = threading.Event()


def side():
    acc, g = torch.zeros(256, 256), torch.Generator().manual_seed(1)  # its own: see test_torch_lines.sh
    while not stop.is_set():
        acc = acc + torch.randn(256, 256, generator=g) @ torch.randn(256, 256, generator=g)  # side thread
    return acc


if __name__ == "__main__":
    torch.set_num_threads(1)
    model = ViT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
    loader = torch.utils.data.DataLoader(Images(), batch_size=16, num_workers=2, persistent_workers=True)
    forked, t = iter(loader), threading.Thread(target=side)  # no fork while the side thread runs
    t.start()
    steps = 0
    for epoch in range(int(sys.argv[1]) if len(sys.argv) > 1 else 2):
        for img, label in loader:
            loss = F.cross_entropy(model(img), label)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            steps += 1
    stop.set()
    t.join()
    print("steps", steps)

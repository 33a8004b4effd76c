"""loader_loop.py STEPS WORKERS [DEVIATE] - an MLP trained STEPS steps on
batches a DataLoader with WORKERS worker processes makes (0: the loop
itself).  With DEVIATE, the sample of index DEVIATE * 32 (in batch DEVIATE)
also makes a 1 MiB temporary: a batch unlike the others.  Prints the last
loss (tests/python/test_loader_fold.sh)."""
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
steps, workers = int(sys.argv[1]), int(sys.argv[2])
deviate = int(sys.argv[3]) if len(sys.argv) > 3 else -1


class Samples(Dataset):
    def __len__(self):
        return 10 ** 6

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        if i == deviate * 32:
            scratch = torch.ones(256 * 1024).sum()  # noqa: F841
        return torch.randn(64, generator=g), i % 10


loader = DataLoader(Samples(), batch_size=32, num_workers=workers)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss = None
for step, (x, y) in enumerate(loader):
    if step == steps:
        break
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("%.6f" % loss.item())

"""Programs that catch a refused allocation and go on (tests/python/test_refused.sh).

  refused_batch.py count   20 steps of two 256x256 tensors kept, and at
                           step 5 a 256 TiB tensor refused (c10 throws):
                           40 tensors in all
  refused_batch.py find B  a batch-size finder as users write it: try batch B,
                           catch the refusal (here: a batch over 64 stands
                           for a device that cannot hold it), halve, then
                           train 30 steps at the batch found
  refused_batch.py find B late   the same, then an evaluation at the end
                           refused (512 TiB, another line): the run's last
                           refusal is not its first
"""
import sys

import torch
import torch.nn as nn


def refuse():
    torch.empty(1 << 46)  # 256 TiB: c10::alloc_cpu throws


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        if x.shape[0] > 64:
            refuse()
        return torch.relu(self.fc(x))


def count():
    kept = []
    for step in range(20):
        a = torch.randn(256, 256)
        kept.append(a @ a)
        if step == 5:
            try:
                refuse()
            except RuntimeError:
                pass
    print(len(kept), "tensors kept")


def evaluate():
    try:
        torch.empty(1 << 47)  # 512 TiB
    except RuntimeError:
        print("evaluation refused")


def find(bs, late=False):
    torch.manual_seed(0)
    model = nn.Sequential(Block(256), Block(256), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    while True:
        try:
            model(torch.randn(bs, 256)).sum().backward()
            break
        except RuntimeError:
            print("batch", bs, "refused")
            opt.zero_grad(set_to_none=True)
            bs //= 2
    print("batch", bs)
    for _ in range(30):
        loss = model(torch.randn(bs, 256)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if late:
        evaluate()


if __name__ == "__main__":
    if sys.argv[1] == "count":
        count()
    else:
        find(int(sys.argv[2]), late=sys.argv[3:] == ["late"])

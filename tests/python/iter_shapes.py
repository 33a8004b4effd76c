#!/usr/bin/python3
"""iter_shapes.py - a training loop in the shapes users write, for the shim's
iteration-structure tests (test_torch_shim.sh, part 10).

Before the loop it prints an initial loss (a forward with grad, in training
mode, that no backward follows); every iteration runs MICRO micro-batches of
forward and backward, steps the optimizer, and only then deletes the
iteration's output and loss (`del out, loss` after `opt.step()`: tensors
re-made every iteration, freed early in the next one by the shim's
boundaries); every second iteration evaluates with model.eval() and grad
still enabled (no torch.no_grad()).  With --checkpoint the body runs under
activation checkpointing (recompute phases inside each backward).
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as cp

ITERS, MICRO = 4, 2


class Net(nn.Module):
    def __init__(self, checkpoint):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64))
        self.head = nn.Linear(64, 10)
        self.checkpoint = checkpoint

    def forward(self, x):
        if self.checkpoint and self.training:
            h = cp.checkpoint(self.body, x.detach().requires_grad_())
        else:
            h = self.body(x)
        return self.head(h)


def main(argv):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net("--checkpoint" in argv)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(16, 32), torch.randint(0, 10, (16,))) for _ in range(MICRO)]
    print("initial loss %.4f" % float(F.cross_entropy(model(data[0][0]), data[0][1])))
    for it in range(ITERS):
        for x, y in data:
            out = model(x)
            loss = F.cross_entropy(out, y)
            (loss / MICRO).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del out, loss
        if it % 2 == 1:
            model.eval()
            val = F.cross_entropy(model(data[1][0]), data[1][1])
            model.train()
            print("iter %d eval %.4f" % (it, float(val)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
"""planted_train.py [cpu|cuda] [ITERS] [MICRO] - a small training loop (an
MLP, SGD, one optimizer step per iteration, over MICRO micro-batches whose
gradients accumulate, 1 by default) with one tensor per DrGPUM pattern,
each made on a line marked PLANT:<pattern>:

  early-allocation    allocated at the start of the forward, first written
                      after the other planted tensors
  temporary-idleness  made at the start of the forward, read again only at
                      its end (over the model's layers)
  unused-allocation   allocated in the forward, never touched
  dead-write          zeroed, then filled before anything read the zeros
                      (a kernel's write-only access: --accesses=exact only)
  overallocation      only its first eighth is ever touched (a view of it;
                      --accesses=exact only: op ranges are whole storages)
  structured-access   each of 4 in-place adds takes its own quarter, none
                      another's (--accesses=exact only)
  non-uniform-frequency  written whole, its first sixteenth then summed 10
                      times, all of it once (--accesses=exact only)
  late-deallocation   a local of the function doing the forward and the
                      backward, read once before the forward: freed when
                      the function returns, after the backward (over the
                      iteration's peak)
  memory-leak         one appended to a list every iteration, never freed

Everything else is what a training loop does: weights kept across
iterations, activations saved for the backward, gradients freed after the
step.  The test (tests/python/test_planted.sh on the CPU, check_52 on a
GPU) finds each planted tensor at its line, first, and nothing else as a
finding.  Ends with os._exit so that nothing is freed at teardown (the
leaked tensors stay leaked)."""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

dev = sys.argv[1] if len(sys.argv) > 1 else "cpu"
ITERS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
MICRO = int(sys.argv[3]) if len(sys.argv) > 3 else 1  # micro-batches per step (gradients accumulated)
torch.manual_seed(0)
B, D, H = 64, 128, 256
BIG = 1 << 20  # floats: the planted tensors are 4 MiB, the model's tensors far smaller


class Net(nn.Module):
    """The planted tensors first (each used in a row, but early and skip),
    then the layers: no tensor of the model's waits for them."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(D, H), nn.Linear(H, H), nn.Linear(H, D)

    def forward(self, x):
        early = torch.empty(BIG, device=dev)  # PLANT:early-allocation
        skip = torch.randn(BIG, device=dev)  # PLANT:temporary-idleness
        unused = torch.empty(BIG, device=dev)  # PLANT:unused-allocation
        dead = torch.zeros(BIG, device=dev)  # PLANT:dead-write
        dead.fill_(2.0)
        s = dead.sum()
        buf = torch.empty(2 * BIG, device=dev)  # PLANT:overallocation
        part = buf[: BIG // 4]
        part.fill_(1.0)
        s = s + part.sum()
        early.fill_(1.0)
        s = s + early.sum()
        sl = torch.empty(3 * BIG // 2, device=dev)  # PLANT:structured-access
        q = sl.numel() // 4
        for k in range(4):
            sl[k * q:(k + 1) * q].add_(1.0)  # each quarter by one kernel, read and written
        hot = torch.ones(5 * BIG // 2, device=dev)  # PLANT:non-uniform-frequency
        n16 = hot.numel() // 16
        sums = [hot[:n16].sum() for _ in range(10)] + [hot.sum()]  # one op after another
        s = s + torch.stack(sums).sum()
        del unused, dead, buf, part, early, sl, hot
        h = torch.relu(self.l1(x))
        h = torch.relu(self.l2(h))
        return self.l3(h) + 0.0 * (skip.sum() + s)


model = Net().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
keep = []


def forward_backward(x, target):
    """The step's forward and backward, in a function of their own as
    training code often has them: its locals live until it returns, after
    the backward (the iteration's peak)."""
    late = torch.randn(BIG, device=dev)  # PLANT:late-deallocation
    s = late.sum()
    y = model(x)
    loss = F.mse_loss(y, target) + 0.0 * s
    loss.backward()
    return loss.detach()


losses = []
for it in range(ITERS):  # the usual order: batch, zero_grad, forward and backward, step
    x, target = torch.randn(B, D, device=dev), torch.randn(B, D, device=dev)
    opt.zero_grad(set_to_none=True)
    for m in range(MICRO):
        loss = forward_backward(x[m::MICRO], target[m::MICRO])
    opt.step()
    keep.append(torch.ones(BIG // 2, device=dev))  # PLANT:memory-leak
    losses.append(float(loss))
print("losses", " ".join("%.4f" % v for v in losses), flush=True)
os._exit(0)

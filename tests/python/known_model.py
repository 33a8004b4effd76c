#!/usr/bin/python3
"""known_model.py - a small known PyTorch training run for the shim's tests.

A 3-layer MLP (fc1, act, fc2 inside a "body" Sequential, then head) trained
with SGD + momentum for ITERS steps of MICRO micro-batches each, on random
data (seeded).  With --check it also annotates, at chosen points where no
autograd graph is alive, PyTorch's own count of live tensor bytes (the sum of
storage nbytes over every live tensor, each storage once) as an annotation
marker "torch_bytes", for the test to compare with the trace.  With
--checkpoint the body runs under activation checkpointing; --iters=N: N steps.
"""
import gc
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as cp

ITERS, MICRO = 3, 2


class Net(nn.Module):
    def __init__(self, checkpoint=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64))
        self.head = nn.Linear(64, 10)
        self.checkpoint = checkpoint

    def forward(self, x):
        if self.checkpoint:
            # reentrant checkpointing needs an input that requires grad
            h = cp.checkpoint(self.body, x.detach().requires_grad_())
        else:
            h = self.body(x)
        return self.head(h)


def storage_bytes():
    """PyTorch's count: every live tensor's storage, each storage once (the
    tensors Python sees, and their .grad, which lives in C++ until asked)."""
    seen = {}

    def add(t):
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        if s.data_ptr():
            seen[s.data_ptr()] = s.nbytes()
    for o in gc.get_objects():
        if issubclass(type(o), torch.Tensor):
            add(o)
            if o.grad is not None:
                add(o.grad)
    return sum(seen.values())


def main(argv):
    check = "--check" in argv
    torch.manual_seed(0)
    torch.set_num_threads(1)
    annotate = lambda name: None
    if check:
        import stprof
        annotate = lambda name: stprof.annotate("torch_bytes", storage_bytes())
    model = Net(checkpoint="--checkpoint" in argv)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    annotate("start")
    data = [(torch.randn(16, 32), torch.randint(0, 10, (16,))) for _ in range(MICRO)]
    for it in range(next((int(a[8:]) for a in argv if a.startswith("--iters=")), ITERS)):
        for x, y in data:
            loss = F.cross_entropy(model(x), y)
            (loss / MICRO).backward()
        del loss
        annotate("before step")
        opt.step()
        opt.zero_grad(set_to_none=True)
        annotate("after step")
    with torch.no_grad():
        out = model(data[0][0])
    annotate("eval")
    print("done %.4f" % float(out.sum()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

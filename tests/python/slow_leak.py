#!/usr/bin/python3
"""slow_leak.py STEPS MODE - a small MLP trained STEPS steps (CPU) that keeps
tensors in a Python list, which the interpreter empties only at exit:
  every10  one 4 KiB tensor every 10 steps (a slow leak, line 25)
  late     one 4 KiB tensor every step from step 700 on (late growth, line 27)
  window   one 4 KiB tensor every step, the last 300 kept (a bounded
           window, no leak, line 29)
  none     nothing kept
Prints how many tensors it holds at the end."""
import collections
import sys

import torch

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
mode = sys.argv[2] if len(sys.argv) > 2 else "every10"
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept = collections.deque(maxlen=300) if mode == "window" else []


def keep(step):
    if mode == "every10" and step % 10 == 9:
        kept.append(torch.empty(1024))
    if mode == "late" and step >= 700:
        kept.append(torch.empty(1024))
    if mode == "window":
        kept.append(torch.empty(1024))


x = torch.randn(32, 64)
y = torch.randint(0, 10, (32,))
for step in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    keep(step)
print(len(kept))

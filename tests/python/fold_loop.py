#!/usr/bin/python3
"""fold_loop.py STEPS [DEVIATE] - a small MLP trained STEPS steps on the CPU
(the shim marks its iterations and phases).  With DEVIATE, step DEVIATE
also makes a 1 MiB temporary (line 22): an iteration unlike the others,
which steady-state folding must write in full.  Prints the final loss."""
import sys

import torch

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
deviate = int(sys.argv[2]) if len(sys.argv) > 2 else -1
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 64)
y = torch.randint(0, 10, (32,))
loss = None
for step in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    if step == deviate:
        scratch = torch.ones(256 * 1024).sum()  # noqa: F841
    loss.backward()
    opt.step()
print("%.6f" % float(loss))

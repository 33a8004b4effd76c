"""drop_loop.py STEPS DROP - a small MLP trained STEPS steps on the CPU; a
256 KiB host buffer made before the loop is given back at step DROP, as
the interpreter gives back its buffers when its garbage collector runs.
With the host heap sampled, that free is as random as the sampled heap:
the step is still folded (tests/python/test_fold.sh).  Prints the loss."""
import sys

import torch

torch.manual_seed(0)
steps, drop = int(sys.argv[1]), int(sys.argv[2])
buf = bytearray(256 * 1024)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 64)
y = torch.randint(0, 10, (32,))
loss = None
for step in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    if step == drop:
        buf = None
    loss.backward()
    opt.step()
print("%.6f" % loss.item())

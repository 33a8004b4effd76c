#!/usr/bin/python3
"""infer_loop.py BATCHES [train STEPS] - batch inference on the CPU: a small
model in eval() mode runs BATCHES batches under torch.no_grad(), as an
evaluation or a batch-inference script does.  With "train STEPS", the
model is then trained STEPS steps (SGD).  Prints a checksum of the
predictions (and the final loss)."""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
batches = int(sys.argv[1]) if len(sys.argv) > 1 else 600
steps = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "train" else 0
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).eval()
data = torch.randn(100, 32, 64)
n = 0
with torch.no_grad():
    for i in range(batches):
        out = model(data[i % 100])
        n += int(out.argmax(1).sum())
print(n)
if steps:
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    y = torch.randint(0, 10, (32,))
    for i in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(data[i % 100]), y)
        loss.backward()
        opt.step()
    print("%.6f" % loss.item())

#!/usr/bin/python3
"""fold_loop.py STEPS [DEVIATE [MODE]] - a small MLP trained STEPS steps on
the CPU (the shim marks its iterations and phases).  With DEVIATE (-1:
none), step DEVIATE also makes a 1 MiB temporary (the line that says so): an
iteration unlike the others, which steady-state folding must write in full.
MODE "manual" updates the parameters by hand, with no optimizer (no step
the shim could end iterations at); "drop": step DEVIATE instead gives back
a 256 KiB host buffer made before the loop, as the interpreter gives back
its buffers when its garbage collector runs (no deviation while the heap
is sampled); "kill": the program is killed by SIGTERM at step DEVIATE,
after its backward; "closure": SGD's step is given a closure that runs the
forward and backward (as LBFGS needs and PyTorch Lightning's loop does);
default "sgd", torch.optim.SGD.  Prints the final loss."""
import os
import signal
import sys

import torch

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
deviate = int(sys.argv[2]) if len(sys.argv) > 2 else -1
mode = sys.argv[3] if len(sys.argv) > 3 else "sgd"
manual = mode == "manual"
buf = bytearray(256 * 1024) if mode == "drop" else None
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 64)
y = torch.randint(0, 10, (32,))
loss = None
for step in range(steps):
    if mode == "closure":
        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            return loss
        loss = opt.step(closure)
        continue
    if not manual:
        opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    if step == deviate and mode == "drop":
        buf = None
    elif step == deviate and mode == "kill":
        loss.backward()
        os.kill(os.getpid(), signal.SIGTERM)
    elif step == deviate:
        scratch = torch.ones(256 * 1024).sum()  # noqa: F841
    loss.backward()
    if not manual:
        opt.step()
        continue
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad
            p.grad = None
print("%.6f" % float(loss))

#!/usr/bin/python3
"""gan_loop.py STEPS [STAGE] - a small GAN trained STEPS steps on the CPU: two
models, two optimizers, each training step a discriminator step then a
generator step, as GANs are trained.  With STAGE, the generator's optimizer
is replaced by a new one at step STAGE (a second stage of training).
Prints the final losses."""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
stage = int(sys.argv[2]) if len(sys.argv) > 2 else -1
G = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32))
D = nn.Sequential(nn.Linear(32, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
opt_g = torch.optim.Adam(G.parameters(), 2e-4)
opt_d = torch.optim.Adam(D.parameters(), 2e-4)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(1024, 32)
ones, zeros = torch.ones(64, 1), torch.zeros(64, 1)
for step in range(steps):
    if step == stage:
        opt_g = torch.optim.SGD(G.parameters(), 1e-3)
    x = real[(step * 64) % 1024:][:64]
    fake = G(torch.randn(64, 16))  # the generator's output: used by both steps
    opt_d.zero_grad()
    loss_d = bce(D(x), ones) + bce(D(fake.detach()), zeros)
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g = bce(D(fake), ones)
    loss_g.backward()
    opt_g.step()
print("%.4f %.4f" % (loss_d.item(), loss_g.item()))

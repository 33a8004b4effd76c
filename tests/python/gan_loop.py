#!/usr/bin/python3
"""gan_loop.py STEPS [stage|warmup N] - a small GAN trained STEPS steps on the
CPU: two models, two optimizers, each training step a discriminator step
then a generator step, as GANs are trained.  "stage N": the generator's
optimizer is replaced by a new one at step N (a second stage of training);
"warmup N": the generator is trained from step N on only, its optimizer
made then (a discriminator warm-up).  Prints the final losses."""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
mode = sys.argv[2] if len(sys.argv) > 3 else ""
at = int(sys.argv[3]) if len(sys.argv) > 3 else -1
G = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32))
D = nn.Sequential(nn.Linear(32, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
opt_g = torch.optim.Adam(G.parameters(), 2e-4) if mode != "warmup" else None
opt_d = torch.optim.Adam(D.parameters(), 2e-4)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(1024, 32)
ones, zeros = torch.ones(64, 1), torch.zeros(64, 1)
for step in range(steps):
    if step == at and mode == "stage":
        opt_g = torch.optim.SGD(G.parameters(), 1e-3)
    if step == at and mode == "warmup":
        opt_g = torch.optim.Adam(G.parameters(), 2e-4)
    x = real[(step * 64) % 1024:][:64]
    fake = G(torch.randn(64, 16))  # the generator's output: used by both steps
    opt_d.zero_grad()
    loss_d = bce(D(x), ones) + bce(D(fake.detach()), zeros)
    loss_d.backward()
    opt_d.step()
    if opt_g is None:
        continue
    opt_g.zero_grad()
    loss_g = bce(D(fake), ones)
    loss_g.backward()
    opt_g.step()
print("%.4f %.4f" % (loss_d.item(), loss_g.item() if opt_g else 0))

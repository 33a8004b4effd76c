#!/usr/bin/python3
"""model_names.py MODE [STEPS [FIRST]] - training loops whose models are not one
root model, for the shim's module names (test_module_names.sh):
  lit      a module whose training_step, not its forward, runs its parts
           (PyTorch Lightning's LightningModule): self.encoder, self.head
  distill  a teacher (under no_grad) and a student, locals of main()
  ema      one model and an EMA copy of it (a global), evaluated each 10
           steps (from step FIRST on: after the loop went lean)
Prints the last loss."""
import copy
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
mode = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
first = int(sys.argv[3]) if len(sys.argv) > 3 else 0


def mlp(width):
    return nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Linear(width, 4))


class Lit(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32))
        self.head = nn.Linear(32, 4)

    def training_step(self, x, y):
        return F.cross_entropy(self.head(self.encoder(x)), y)


def main():
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    loss = None
    if mode == "lit":
        lit = Lit()
        opt = torch.optim.SGD(lit.parameters(), 0.1)
        for _ in range(steps):
            opt.zero_grad()
            loss = lit.training_step(x, y)
            loss.backward()
            opt.step()
    elif mode == "distill":
        teacher, student = mlp(64), mlp(16)
        opt = torch.optim.SGD(student.parameters(), 0.1)
        for _ in range(steps):
            with torch.no_grad():
                soft = F.softmax(teacher(x), -1)
            opt.zero_grad()
            loss = F.kl_div(F.log_softmax(student(x), -1), soft, reduction="batchmean")
            loss.backward()
            opt.step()
    elif mode == "ema":
        global ema
        opt = torch.optim.SGD(model.parameters(), 0.1)
        for step in range(steps):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with torch.no_grad():
                for e, p in zip(ema.parameters(), model.parameters()):
                    e.mul_(0.9).add_(p, alpha=0.1)
                if step % 10 == 9 and step >= first:
                    ema.eval()
                    ema(x)
    print("%.4f" % loss.item())


model = mlp(32)
ema = copy.deepcopy(model)
main()

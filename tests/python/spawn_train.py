#!/usr/bin/python3
"""spawn_train.py WORKERS STEPS - a launcher: torch.multiprocessing.spawn
starts WORKERS processes (fresh interpreters, the "spawn" start method),
each training a small MLP for STEPS steps on the CPU; the parent makes no
tensor and runs no loop of its own.  Prints each worker's final loss."""
import sys

import torch
import torch.multiprocessing as mp


def worker(rank, steps):
    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    print("worker %d: %.6f" % (rank, loss.item()), flush=True)


if __name__ == "__main__":
    mp.spawn(worker, args=(int(sys.argv[2]),), nprocs=int(sys.argv[1]))

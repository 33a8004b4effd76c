#!/usr/bin/python3
"""planted.py - three planted inefficiencies for `stprof record --accesses`:
an early allocation (line 16: allocated, first written three ops later), a
late deallocation (line 20: last read at once, freed after three more ops)
and an unused tensor (line 23: allocated, never touched).  The test finds
each at its line."""
import torch


def step(w, x):
    y = x @ w
    return y.relu()


def main():
    early = torch.empty(64, 64)
    a = torch.randn(64, 64)
    b = step(a, a)
    early.copy_(b)
    late = a @ a
    s = late.sum()
    c = step(b, b) + s
    unused = torch.empty(32, 32)
    d = step(c, c)
    del late
    print(float(d.sum() + early.sum()) != 0, unused.shape)


if __name__ == "__main__":
    main()

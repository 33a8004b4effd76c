#!/usr/bin/python3
"""varlen_loop.py STEPS - a token model trained STEPS steps on the CPU with a
different sequence length each step (16 to 96 tokens, drawn with a fixed
seed), as language models are trained on unpadded batches: each iteration
makes the same tensors at the same lines with other sizes.  Prints the
final loss."""
import random
import sys

import torch

torch.manual_seed(0)
random.seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
vocab, width = 64, 32
model = torch.nn.Sequential(torch.nn.Embedding(vocab, width), torch.nn.Linear(width, 64),
                            torch.nn.GELU(), torch.nn.Linear(64, vocab))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
loss = None
for step in range(steps):
    tokens = torch.randint(0, vocab, (4, random.randint(16, 96)))
    logits = model(tokens[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
print("%.6f" % loss.item())

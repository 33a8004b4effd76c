#!/usr/bin/python3
"""varlen_loop.py STEPS [step|ahead] - a token model trained STEPS steps on the CPU
with a different sequence length each step (16 to 96 tokens, drawn with a
fixed seed), as language models are trained on unpadded batches: each
iteration makes the same tensors at the same lines with other sizes.  The
loop keeps a step's batch and logits until the next step replaces them (so
each step's peak depends on the step before: the logits go in its
forward); with "step", a function makes each step (a train_step()) and
its logits go in its own backward; with "ahead", a loader that fetches one
batch ahead (as accelerate's does under Hugging Face's Trainer) makes each
batch, the next step's, before it hands out the step's own: each step
then makes tensors of two lengths, the next one's ahead of its forward.
Prints the final loss."""
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
in_function = len(sys.argv) > 2 and sys.argv[2] == "step"
ahead = len(sys.argv) > 2 and sys.argv[2] == "ahead"


def batch():
    """A batch collated from rows, with a mask made and dropped on the way."""
    t = torch.randint(0, vocab, (4, random.randint(16, 96)))
    keep = t.ge(0)
    return t.masked_fill(~keep, 0)


def loader():
    """Yields the batches, each fetched one batch ahead."""
    following = batch()
    while True:
        current, following = following, batch()
        yield current


def train_step(tokens):
    loss = torch.nn.functional.cross_entropy(model(tokens[:, :-1]).reshape(-1, vocab), tokens[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


loss = None
fetch = loader()
for step in range(steps):
    if ahead:
        loss = train_step(next(fetch))
        continue
    if in_function:
        loss = train_step(torch.randint(0, vocab, (4, random.randint(16, 96))))
        continue
    tokens = torch.randint(0, vocab, (4, random.randint(16, 96)))
    logits = model(tokens[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
print("%.6f" % loss.item())

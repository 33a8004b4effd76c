#!/usr/bin/python3
"""torch_transformer.py - a small PyTorch training run to profile with stprof.

A decoder-only transformer language model (token and position embeddings,
pre-norm blocks of causal self-attention and MLP, a tied output layer)
learns sequences drawn from a fixed random Markov chain over a small
vocabulary, with AdamW, on the CPU.  The loss falls from about ln(vocab)
towards the chain's entropy.  Output depends only on the options (seeded,
no timings).

Under `stprof python3 ...` stprof's Python shim marks iterations, phases and
modules by itself (docs/python.md) and the script's own marking stands down.
Run under the bare collector (LD_PRELOAD=libstprof.so), the script marks its
iterations, phases (forward, backward and optimizer, per micro-batch) and
modules (every nn.Module by its qualified name, e.g. "layers.0.attn",
through forward pre-hooks and hooks) itself, through the collector's one C
function stprof_mark_v1(kind, name, value), which ctypes finds in the
process; without the collector marking does nothing.

    stprof /usr/bin/python3 examples/torch_transformer.py --iters 5
"""
import argparse
import ctypes
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

# Marker kinds, as in include/stprof/stprof.h.
ITER_BEGIN, ITER_END, PHASE_BEGIN, PHASE_END, MODULE_ENTER, MODULE_EXIT = 1, 2, 3, 4, 5, 6


class Markers:
    """stprof's marker API, or nothing when the program runs without stprof."""

    def __init__(self):
        try:
            fn = ctypes.CDLL(None).stprof_mark_v1
        except AttributeError:
            fn = None
        if "stprof" in sys.modules:
            fn = None  # stprof's Python shim marks everything by itself
        if fn is not None:
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int64]
            fn.restype = None
        self._fn = fn

    def mark(self, kind, name, value=0):
        if self._fn is not None:
            self._fn(kind, name.encode() if name is not None else None, value)

    def phase(self, name, micro_batch):
        return _Phase(self, name, micro_batch)

    def hook_modules(self, model):
        """Marks entry and exit of every submodule's forward by its qualified name."""
        for name, module in model.named_modules():
            if not name:
                continue  # the root: the iteration markers cover it
            # n=name binds the name now, not when the hook runs
            module.register_forward_pre_hook(
                lambda _m, _inp, n=name: self.mark(MODULE_ENTER, n))
            module.register_forward_hook(
                lambda _m, _inp, _out, n=name: self.mark(MODULE_EXIT, n))


class _Phase:
    def __init__(self, markers, name, micro_batch):
        self.markers, self.name, self.micro_batch = markers, name, micro_batch

    def __enter__(self):
        self.markers.mark(PHASE_BEGIN, self.name, self.micro_batch)

    def __exit__(self, *exc):
        self.markers.mark(PHASE_END, self.name, self.micro_batch)
        return False


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        # (b, heads, t, d / heads)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = scores.masked_fill(causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.fc1 = nn.Linear(d_model, 4 * d_model)
        self.fc2 = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class LanguageModel(nn.Module):
    def __init__(self, vocab, seq, d_model, heads, layers):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(seq, d_model)
        self.layers = nn.ModuleList(Block(d_model, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        # small embeddings keep the tied output layer's first logits near 0
        nn.init.normal_(self.tokens.weight, std=0.02)
        nn.init.normal_(self.positions.weight, std=0.02)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tokens(idx) + self.positions(pos)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x) @ self.tokens.weight.t()  # logits, output tied to input


def markov_chain(vocab, successors, gen):
    """A transition matrix in which each token has a few likely successors."""
    logits = torch.full((vocab, vocab), -4.0)
    for a in range(vocab):
        nxt = torch.randperm(vocab, generator=gen)[:successors]
        logits[a, nxt] = 2.0 * torch.rand(successors, generator=gen)
    return logits.softmax(dim=1)


def sample_batch(chain, batch, seq, gen):
    """batch sequences of seq + 1 tokens drawn from the chain."""
    tokens = torch.empty(batch, seq + 1, dtype=torch.long)
    tokens[:, 0] = torch.randint(chain.shape[0], (batch,), generator=gen)
    for t in range(seq):
        tokens[:, t + 1] = torch.multinomial(chain[tokens[:, t]], 1, generator=gen).squeeze(1)
    return tokens[:, :-1], tokens[:, 1:]


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer, got %r" % text)
    return value


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Train a small transformer language model on synthetic tokens (CPU), "
                    "marking iterations, phases and modules for stprof.")
    ap.add_argument("--iters", type=int, default=5, help="training iterations (default 5)")
    ap.add_argument("--layers", type=positive, default=2, help="transformer blocks (default 2)")
    ap.add_argument("--d-model", type=positive, default=64, help="model width (default 64)")
    ap.add_argument("--heads", type=positive, default=4, help="attention heads (default 4)")
    ap.add_argument("--vocab", type=positive, default=64, help="vocabulary size (default 64)")
    ap.add_argument("--batch", type=positive, default=16,
                    help="sequences per iteration (default 16)")
    ap.add_argument("--seq", type=positive, default=64, help="tokens per sequence (default 64)")
    ap.add_argument("--micro-batches", type=positive, default=2,
                    help="split each batch into this many micro-batches whose gradients "
                         "accumulate; must divide --batch (default 2)")
    ap.add_argument("--threads", type=positive, default=1,
                    help="CPU threads for PyTorch (default 1)")
    ap.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate (default 0.003)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    args = ap.parse_args(argv)
    if args.iters < 0:
        ap.error("--iters must not be negative")
    if args.batch % args.micro_batches:
        ap.error("--micro-batches %d does not divide --batch %d" % (args.micro_batches, args.batch))
    if args.d_model % args.heads:
        ap.error("--heads %d does not divide --d-model %d" % (args.heads, args.d_model))
    return args


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    data_gen = torch.Generator().manual_seed(args.seed + 1)
    markers = Markers()

    chain = markov_chain(args.vocab, 4, data_gen)
    model = LanguageModel(args.vocab, args.seq, args.d_model, args.heads, args.layers)
    markers.hook_modules(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    rows = args.batch // args.micro_batches
    print("torch_transformer: %d layers, d_model %d, batch %d x %d tokens in %d micro-batches, "
          "%d iterations" % (args.layers, args.d_model, args.batch, args.seq,
                             args.micro_batches, args.iters))

    model.train()
    for it in range(args.iters):
        markers.mark(ITER_BEGIN, None, it)
        total = 0.0
        for mb in range(args.micro_batches):
            with markers.phase("forward", mb):
                inputs, targets = sample_batch(chain, rows, args.seq, data_gen)
                logits = model(inputs)
                loss = F.cross_entropy(logits.reshape(-1, args.vocab), targets.reshape(-1))
            with markers.phase("backward", mb):
                (loss / args.micro_batches).backward()
            total += loss.item()
            del logits, loss
        with markers.phase("optimizer", 0):
            opt.step()
            opt.zero_grad(set_to_none=True)
        markers.mark(ITER_END, None, it)
        print("iter %4d  loss %.4f" % (it, total / args.micro_batches), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

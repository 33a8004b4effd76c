# torch_train.py - a small transformer trained for a few iterations on the
# CPU, marking iterations and phases with malloc(0x3E570000 | kind << 12 |
# value) so that plan_heaptrack2stp can turn them into markers.  Usage:
#   python3 torch_train.py [ITERATIONS] [MICRO_BATCHES]
import ctypes
import sys

import torch

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]


def mark(kind, value=0):
    libc.free(libc.malloc(0x3E570000 | kind << 12 | value))


iters = int(sys.argv[1]) if len(sys.argv) > 1 else 4
mbs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
torch.manual_seed(0)
torch.set_num_threads(1)
layer = torch.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, batch_first=True)
model = torch.nn.TransformerEncoder(layer, num_layers=4)
head = torch.nn.Linear(128, 1000)
params = list(model.parameters()) + list(head.parameters())
opt = torch.optim.Adam(params, lr=1e-3)
x = torch.randn(mbs, 16, 64, 128)
y = torch.randint(0, 1000, (mbs, 16, 64))
for it in range(iters):
    mark(1, it)
    opt.zero_grad()
    for mb in range(mbs):
        mark(3, 0)
        logits = head(model(x[mb]))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 1000), y[mb].reshape(-1))
        mark(4, 0)
        mark(3, 1)
        loss.backward()
        mark(4, 1)
        del logits, loss
    mark(3, 2)
    opt.step()
    mark(4, 2)
    mark(2, it)

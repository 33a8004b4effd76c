"""compiled_train.py STEPS MODE - a small language model trained with
torch.compile (PyTorch 2.x): MODE "model" compiles the model
(torch.compile(model)), "step" also the optimizer step (a compiled function
that calls opt.step()), "hooked" compiles the model of a program with a
global module hook of its own (PyTorch then warns at the compiled model's
calls).  backend="eager": TorchDynamo traces and breaks
graphs as with Inductor, without a C++ compiler.  Prints TorchDynamo's
graph-break and graph counts and the last loss, which must be the same with
and without stprof (tests/python/test_torch_compile.sh)."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, d=32, v=50):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.l1 = nn.Linear(d, 4 * d)
        self.l2 = nn.Linear(4 * d, d)
        self.head = nn.Linear(d, v)

    def forward(self, x):
        h = self.emb(x)
        h = h + self.l2(F.gelu(self.l1(h)))
        return self.head(h)


steps, mode = int(sys.argv[1]), sys.argv[2]
model = Net()
cmodel = torch.compile(model, backend="eager")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = opt.step
if mode == "hooked":
    torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: None)
if mode == "step":
    step = torch.compile(lambda: opt.step(), backend="eager")

for i in range(steps):
    x = torch.randint(0, 50, (4, 16))
    loss = F.cross_entropy(cmodel(x).view(-1, 50), x.view(-1))
    loss.backward()
    step()
    opt.zero_grad(set_to_none=True)
c = torch._dynamo.utils.counters
print("graph_breaks=%d unique_graphs=%d loss=%.6f" % (sum(c["graph_break"].values()),
      c["stats"]["unique_graphs"], loss.item()))

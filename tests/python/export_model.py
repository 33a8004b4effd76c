"""export_model.py - torch.export (strict and not) of a small model, then a
few training steps: prints the exported graphs' code and the last loss,
which must be the same with and without stprof
(tests/python/test_torch_compile.sh; PyTorch 2.x)."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(8, 16)
        self.l2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x))) * 2


model = Net()
x = torch.randn(2, 8)
for strict in (True, False):
    print(torch.export.export(model, (x,), strict=strict).graph_module.code)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    loss = model(torch.randn(2, 8)).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print("loss=%.6f" % loss.item())

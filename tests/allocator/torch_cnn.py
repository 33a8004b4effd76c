"""torch_cnn.py - a plain CNN training loop (SGD with momentum, whose buffers
are made in the first step; zero_grad keeps the gradients), not shaped for
stprof: libstalloc must follow its tensor plan (test_stalloc_programs.sh)."""
import torch, torch.nn as nn
torch.manual_seed(0)
m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                  nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                  nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(32, 3, 32, 32); y = torch.randint(0, 10, (32,))
for i in range(6):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(m(x), y)
    loss.backward(); opt.step()
    print(i, f"{loss.item():.6f}")

"""torch_eval_every.py - a training loop that evaluates every 20 steps, as
most do: an MLP with Adam, and at steps 19, 39, ... a no_grad pass over a
validation set in batches (model.eval(), argmax, accuracy printed).  Not
shaped for stprof: the evaluation steps ask for what the training steps do
not.  Usage: torch_eval_every.py [STEPS]"""
import sys
import torch, torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, Y = torch.randn(64, 128), torch.randint(0, 10, (64,))
VX, VY = torch.randn(256, 128), torch.randint(0, 10, (256,))
for step in range(steps):
    model.train()
    loss = nn.functional.cross_entropy(model(X), Y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 20 == 19:
        model.eval()
        with torch.no_grad():
            right = sum((model(VX[i:i + 64]).argmax(1) == VY[i:i + 64]).sum().item() for i in range(0, 256, 64))
        print(step, f"{loss.item():.4f}", right / 256)

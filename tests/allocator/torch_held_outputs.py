"""torch_held_outputs.py - the common loop shape `pred = model(xb)` where the
names stay bound until the next iteration rebinds them: each iteration's
batch, prediction and loss are still live when the next one's are made (two
instances at once).  An autoencoder with Adam over batches drawn per step,
not shaped for stprof: the plan gives each such tensor a spare range and
libstalloc alternates between the two (test_stalloc_programs.sh)."""
import torch, torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 256), nn.Tanh(), nn.Linear(256, 64), nn.Tanh(),
                      nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 512))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
crit = nn.MSELoss()
data = torch.randn(8, 48, 512)
for step in range(8):
    xb = data[step] + 0.01 * torch.randn(48, 512)
    pred = model(xb)
    loss = crit(pred, xb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    print(step, f"{loss.item():.6f}")

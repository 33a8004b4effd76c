# Another distributed program, not shaped for stprof's tests: a small conv
# net trained with Adam on the same synthetic images on every rank, read
# through a DataLoader with a worker process (forked: it inherits RANK), and
# a loss averaged across ranks with all_reduce.  Used by test_ranks.sh.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("gloo")
torch.manual_seed(1)
data = TensorDataset(torch.randn(96, 3, 16, 16), torch.randint(0, 4, (96,)))
loader = DataLoader(data, batch_size=32, num_workers=1)
model = DDP(torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 4)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(2):
    total = torch.zeros(1)
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        total += loss.detach()
    dist.all_reduce(total)
    if dist.get_rank() == 0:
        print("epoch", epoch, "mean loss %.3f" % (total.item() / dist.get_world_size() / len(loader)))
dist.destroy_process_group()

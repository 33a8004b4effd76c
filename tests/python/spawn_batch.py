# A small DDP training loop on CPU (gloo) started the way many scripts
# start it, with torch.multiprocessing.spawn: no RANK in the workers'
# environment, each passes its rank to init_process_group.  Rank 1 trains
# on a batch 8 times rank 0's.  Used by test_ranks.sh.
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def make_batch(n):
    return torch.randn(n, 256), torch.randint(0, 10, (n,))


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    os.environ["RANK"] = str(rank)  # as many scripts do: set late, it names no trace
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = 64 if rank == 0 else 512
    for _ in range(4):
        x, y = make_batch(batch)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()
    print(f"rank {rank} done", flush=True)


if __name__ == "__main__":
    mp.spawn(worker, args=(2, sys.argv[1]), nprocs=2)

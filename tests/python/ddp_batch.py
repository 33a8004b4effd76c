# A small DDP training loop on CPU (gloo) in which rank 1 trains on a
# batch 8 times rank 0's: rank 1 peaks, and the bytes that differ are the
# batch's and the activations'.  Used by test_ranks.sh (and its training
# loop by spawn_batch.py).
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def make_batch(n):
    return torch.randn(n, 256), torch.randint(0, 10, (n,))


def train(rank):
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
    print(f"rank {rank} done", flush=True)  # one write: the ranks share the terminal


def main():
    dist.init_process_group("gloo")
    train(dist.get_rank())


if __name__ == "__main__":
    main()

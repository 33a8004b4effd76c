# The DDP training loop of ddp_batch.py (rank 1 with 8 times rank 0's
# batch), started the way many scripts start it, with
# torch.multiprocessing.spawn: no RANK in the workers' environment, each
# passes its rank to init_process_group.  Used by test_ranks.sh.
import os
import sys

import torch.distributed as dist
import torch.multiprocessing as mp

import ddp_batch


def worker(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    os.environ["RANK"] = str(rank)  # as many scripts do: set late, it names no trace
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ddp_batch.train(rank)


if __name__ == "__main__":
    mp.spawn(worker, args=(2, sys.argv[1]), nprocs=2)

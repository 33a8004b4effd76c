"""stprof.ranks - a rank known only once the program says so.

torch.multiprocessing.spawn starts its workers without RANK in their
environment; each passes its rank to torch.distributed.init_process_group.
After that returns, the wrapper tells the collector the rank
(stprof_rank_v1, collector/core/rank_late.c): the worker's trace becomes
<path>.rank<R>, and the report compares the ranks as it does torchrun's.
The collector leaves a process that had RANK from the start (torchrun) as
it is; RANK that the worker sets itself before init_process_group does not
count (its trace was named without it)."""
import ctypes
import functools
import os


def install(torch):
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return
    real = getattr(dist, "init_process_group", None)
    if real is None or getattr(real, "_stprof", False):
        return
    try:
        tell = ctypes.CDLL(None).stprof_rank_v1
    except AttributeError:
        return
    tell.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    tell.restype = None

    @functools.wraps(real)
    def init_process_group(*args, **kwargs):
        out = real(*args, **kwargs)
        try:
            local = os.environ.get("LOCAL_RANK")
            tell(dist.get_rank(), int(local) if local and local.isdigit() else -1, dist.get_world_size())
        except Exception:  # never break the program
            pass
        return out
    init_process_group._stprof = True
    dist.init_process_group = init_process_group

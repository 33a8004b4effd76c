"""stprof.torch_cuda - who records a PyTorch program's CUDA memory, set at
`import torch`, before the program touches the GPU (collector/cuda_mode.h).

STPROF_TORCH_CUDA (from `stprof record --torch-cuda=MODE`) picks the mode:

  caching    (default) PyTorch's own caching allocator runs as it would;
             libstprof.so records every block it hands out and takes back,
             and the segments it reserves, from the report the allocator
             makes to the profiler (collector/torch_cuda_caching.c).  The
             shim only sets the mode, and after torch.cuda.empty_cache()
             tells the collector each device's reserved bytes (the releases
             it made, which no report shows).
  pluggable  STAlloc's profiling mode: libstprof.so becomes PyTorch's
             CUDAPluggableAllocator (torch.cuda.memory.change_current_
             allocator), one cudaMalloc and cudaFree per tensor, each
             recorded with its Python line.  Needs PyTorch 2.0+ built with
             CUDA; otherwise the shim says so once and uses caching.
  off        neither: the CUDA backend records cudaMalloc calls themselves.

Never initializes CUDA; errors never reach the program.
"""
import ctypes
import functools
import os
import sys

MODES = {"off": 0, "pluggable": 1, "caching": 2}
DEFAULT = "caching"
_mode = None


def _warn(msg):
    sys.stderr.write("stprof: %s\n" % msg)


def _library(prefix="libstprof.so"):
    """The path of the library named prefix* loaded in this process, or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.rstrip("\n").split(None, 5)
                if len(parts) == 6 and os.path.basename(parts[5]).startswith(prefix):
                    return parts[5]
    except OSError:
        pass
    return None


def _install_pluggable(torch, what="--torch-cuda=pluggable", prefix="libstprof.so",
                       alloc_fn="stprof_torch_cuda_alloc", free_fn="stprof_torch_cuda_free"):
    """The library prefix* as PyTorch's CUDA allocator; False when it cannot be."""
    if getattr(torch.version, "cuda", None) is None:
        _warn("%s: this PyTorch has no CUDA; using caching" % what)
        return False
    mem = getattr(torch.cuda, "memory", None)
    if mem is None or not hasattr(mem, "CUDAPluggableAllocator") or not hasattr(mem, "change_current_allocator"):
        _warn("%s: needs PyTorch 2.0 or later (this is %s); using caching" % (what, torch.__version__))
        return False
    lib = _library(prefix)
    if lib is None:
        _warn("%s: %s is not loaded; using caching" % (what, prefix))
        return False
    try:
        alloc = mem.CUDAPluggableAllocator(lib, alloc_fn, free_fn)
        mem.change_current_allocator(alloc)
    except Exception as e:  # CUDA already initialized, ...
        _warn("%s: %s; using caching" % (what, e))
        return False
    return True


def install_stalloc(torch):
    """Under `stprof run --plan` with a device plan: libstalloc.so becomes
    PyTorch's CUDA allocator (its stalloc_torch_alloc/free entry points), so
    that the plan is enforced on every tensor, as it was recorded in
    pluggable mode.  A host or tensor plan (or one libstalloc could not
    read) leaves PyTorch's CUDA allocator alone.  Returns True when installed."""
    try:  # libstalloc.so read the plan: it says whether it is a device plan
        f = ctypes.CDLL(None).stalloc_device_plan
    except AttributeError:
        return False
    f.restype = ctypes.c_int
    if not f():
        return False
    return _install_pluggable(torch, "stprof run --plan (a device plan)", "libstalloc.so",
                              "stalloc_torch_alloc", "stalloc_torch_free")


def _wrap_empty_cache(torch, reserved):
    cuda = torch.cuda
    real = cuda.empty_cache
    if getattr(real, "_stprof", False):
        return

    @functools.wraps(real)
    def empty_cache(*args, **kwargs):
        out = real(*args, **kwargs)
        try:
            if cuda.is_initialized():
                for d in range(cuda.device_count()):
                    reserved(d, cuda.memory_reserved(d))
        except Exception:
            pass
        return out
    empty_cache._stprof = True
    cuda.empty_cache = empty_cache
    mem = getattr(cuda, "memory", None)
    if mem is not None and getattr(mem, "empty_cache", None) is real:
        mem.empty_cache = empty_cache


def mode():
    """The mode in force ("caching", "pluggable", "off"; "stalloc" when
    libstalloc enforces a device plan), None before install."""
    return _mode


def install(torch):
    """Sets the mode once; call before the program uses the GPU."""
    global _mode
    if _mode is not None:
        return
    if os.environ.get("STALLOC_PLAN") or os.environ.get("STALLOC_RANK_PLANS"):
        _mode = "stalloc" if install_stalloc(torch) else "off"
        return
    try:
        lib = ctypes.CDLL(None)
        setter = lib.stprof_torch_cuda_v1
        reserved = lib.stprof_torch_cuda_reserved_v1
    except AttributeError:
        return
    setter.argtypes = [ctypes.c_int]
    setter.restype = ctypes.c_int
    reserved.argtypes = [ctypes.c_int, ctypes.c_uint64]
    reserved.restype = None
    want = os.environ.get("STPROF_TORCH_CUDA") or DEFAULT
    if want not in MODES:
        _warn("STPROF_TORCH_CUDA=%s: not one of pluggable, caching, off; using %s" % (want, DEFAULT))
        want = DEFAULT
    if want == "pluggable" and not _install_pluggable(torch):
        want = "caching"
    setter(MODES[want])
    _mode = want
    if want == "caching" and getattr(torch.version, "cuda", None) is not None:
        _wrap_empty_cache(torch, reserved)

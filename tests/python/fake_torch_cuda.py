"""A stand-in for PyTorch 2.x's CUDA allocator glue (no GPU here), for
test_torch_cuda.sh: torch.cuda.memory.CUDAPluggableAllocator loads the given
library and calls its alloc/free functions exactly as PyTorch's C++ does
(alloc(ssize_t size, int device, cudaStream_t stream), free(ptr, size,
device, stream)); cudaMalloc is fakecuda/libcudart.so.12.  The shim installs
libstprof.so through it (tensors made from Python then carry their line),
and under `stprof run --plan` with a device plan, libstalloc.so."""
import ctypes
import sys
import types

ctypes.CDLL("libcudart.so.12")  # as PyTorch has its runtime loaded


class CUDAPluggableAllocator:
    def __init__(self, path, alloc, free):
        lib = ctypes.CDLL(path)
        self.alloc = getattr(lib, alloc)
        self.alloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        self.alloc.restype = ctypes.c_void_p
        self.free = getattr(lib, free)
        self.free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        self.free.restype = None
        self.path = path


current = []


def change_current_allocator(a):
    current.append(a)


torch = types.SimpleNamespace(
    __version__="2.4.0+fake", version=types.SimpleNamespace(cuda="12.4"),
    cuda=types.SimpleNamespace(memory=types.SimpleNamespace(
        CUDAPluggableAllocator=CUDAPluggableAllocator, change_current_allocator=change_current_allocator)))

from stprof import torch_cuda  # noqa: E402

torch_cuda.install(torch)
print("mode", torch_cuda.mode(), "allocator", len(current), current[0].path.rsplit("/", 1)[-1] if current else None)


def make_tensor(n):
    return current[0].alloc(n, 0, 0x77)


ts = [make_tensor(4096 * (i + 1)) for i in range(3)]
current[0].free(ts[0], 4096, 0, 0x77)
print("tensors", sum(1 for t in ts if t))
sys.stdout.flush()

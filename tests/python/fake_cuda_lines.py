"""fake_cuda_lines.py MODE - PyTorch's two ways of handing CUDA tensors to
stprof, driven as PyTorch drives them but without a GPU, from Python threads
that do not hold the GIL (ctypes.CDLL releases it around each call, as
PyTorch's bindings do around each op) while another Python thread keeps
taking it:
  caching    c10::reportMemoryUsageToProfiler, as the caching allocator calls
             it under its own lock (the collector must not wait for the GIL);
  pluggable  stprof_torch_cuda_alloc / _free, as CUDAPluggableAllocator
             calls them (cudaMalloc: the stand-in fakecuda/libcudart.so.12).
Each tensor must carry its Python line (test_torch_cuda_lines.sh).  In
pluggable mode a "backward pass" follows: the collector is told it begins
(as the shim's wrapper of torch.autograd.backward tells it) and a thread
with no Python (fakecuda/libfakedevthread.so, a stand-in for autograd's
device thread) makes a tensor: it must point at the line that started the
backward; then, after a module's forward told the collector its site and a
node's pre-hook ran on that thread (as the shim's hooks do), another: it
must point at the line that called the module, as its backward."""
import ctypes
import sys
import threading

mode = sys.argv[1]
lib = ctypes.CDLL(None)
if mode == "pluggable":
    ctypes.CDLL("libcudart.so.12")
set_mode = lib.stprof_torch_cuda_v1
set_mode.argtypes = [ctypes.c_int]
assert set_mode(1 if mode == "pluggable" else 2) == 0

alloc = lib.stprof_torch_cuda_alloc
alloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
alloc.restype = ctypes.c_void_p
free = lib.stprof_torch_cuda_free
free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
report = lib["_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE"]
# (ptr, +/-bytes, allocated total, reserved total, c10::Device{type CUDA, index 0})
report.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint16]
MiB = 1 << 20
lock = threading.Lock()
state = {"next": 0x7F0000000000, "allocated": 0, "reserved": 0}


def make(nbytes):
    if mode == "pluggable":
        return alloc(nbytes, 0, 0x77)
    with lock:  # one block per 2 MiB segment: the allocator's own bookkeeping
        p = state["next"]
        state["next"] += 2 * MiB
        state["allocated"] += nbytes
        state["reserved"] += 2 * MiB
        a, r = state["allocated"], state["reserved"]
    report(p, nbytes, a, r, 1)
    return p


def drop(p, nbytes):
    if mode == "pluggable":
        free(p, nbytes, 0, 0x77)
        return
    with lock:
        state["allocated"] -= nbytes
        a, r = state["allocated"], state["reserved"]
    report(p, -nbytes, a, r, 1)


stop = threading.Event()


def busy():  # a Python thread that keeps taking the GIL
    n = 0
    while not stop.is_set():
        n += sum(range(100))


def forward_pass():
    kept = [make(MiB) for _ in range(4)]  # forward line
    return kept


side = []


def side_thread():
    for _ in range(8):
        side.append(make(MiB // 2))  # side line


b = threading.Thread(target=busy)
b.start()
s = threading.Thread(target=side_thread)
s.start()
kept = forward_pass()
s.join()
stop.set()
b.join()
if mode == "pluggable":
    devthread = ctypes.CDLL("libfakedevthread.so")
    on_device_thread = devthread.fake_device_thread_alloc
    on_device_thread.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    on_device_thread.restype = ctypes.c_void_p
    on_device_thread_hook = devthread.fake_device_thread_hook_alloc
    on_device_thread_hook.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                      ctypes.c_void_p]
    on_device_thread_hook.restype = ctypes.c_void_p
    py = ctypes.PyDLL(None)
    backward = py.stprof_py_backward_v1
    backward.argtypes = [ctypes.c_int]
    module_site = py.stprof_py_module_site_v1
    module_site.argtypes, module_site.restype = [ctypes.c_char_p], ctypes.c_uint32
    use_site = py.stprof_py_backward_site_v1
    use_site.argtypes = [ctypes.c_uint32]

    def forward_hook():  # as the shim's forward hook of module blocks.0.mlp
        return module_site(b"blocks.0.mlp")  # module line

    site = forward_hook()
    assert site, "no site"
    # as autograd calls the node's pre-hook on its device thread
    pre_hook = ctypes.CFUNCTYPE(None)(lambda: use_site(site))

    def loss_backward():
        backward(1)  # as the shim's wrapper of torch.autograd.backward
        g = on_device_thread(ctypes.cast(alloc, ctypes.c_void_p), 3 * MiB, 0, 0x77)
        h = on_device_thread_hook(ctypes.cast(pre_hook, ctypes.c_void_p), ctypes.cast(alloc, ctypes.c_void_p),
                                  5 * MiB, 0, 0x77)
        backward(0)
        return g, h

    grad, grad_mlp = loss_backward()  # backward line
for p in kept:
    drop(p, MiB)
if mode == "pluggable":
    free(grad, 3 * MiB, 0, 0x77)
    free(grad_mlp, 5 * MiB, 0, 0x77)
for p in side:
    drop(p, MiB // 2)
print("done", mode)

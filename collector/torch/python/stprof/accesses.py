"""stprof.accesses - op-level accesses of a PyTorch program (`stprof record
--accesses`): for every aten operator, which tensor storages it read and
which it wrote, as one API event (kind "framework op", the op's name) with
address ranges, through the collector's stprof_api_v1.

A TorchDispatchMode entered once for the whole program (on the thread that
imports torch; CPU autograd runs the backward's ops on that thread too)
sees each op below autograd, forward and backward alike.  Ranges are whole
storages: the tensor arguments are read, the outputs written, and an
argument the op's schema marks as written (in-place and out= ops) is read
and written.  Ops that touch no data are not recorded: a view (t, slice,
detach, view: every output an alias of an input, none written), and an
aten.empty* op (its output is allocated, not written: the ALLOC event).  A storage is listed once per op with its modes or'ed.  Costs
a Python call per op: off by default.
"""
import ctypes

READ, WRITE = 1, 2
_MAX = 64


def _storage(t):
    try:
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        return s.data_ptr(), s.nbytes()
    except Exception:  # sparse, meta, or no storage
        return 0, 0


def install(torch):
    try:
        fn = ctypes.CDLL(None).stprof_api_v1
    except AttributeError:
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.c_void_p]
    fn.restype = None
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    Tensor = torch.Tensor
    addrs = (ctypes.c_uint64 * _MAX)()
    sizes = (ctypes.c_uint64 * _MAX)()
    modes = (ctypes.c_uint8 * _MAX)()
    names = {}
    written = {}

    def writes_of(func):
        w = written.get(func)
        if w is None:
            w = tuple(i for i, a in enumerate(func._schema.arguments)
                      if a.alias_info is not None and a.alias_info.is_write)
            written[func] = w
        return w

    views = {}

    def is_view(func):
        # a view (t, slice, detach, view, ...) returns aliases of its input
        # and touches no data: no access, and not an op that does work
        v = views.get(func)
        if v is None:
            rets = func._schema.returns
            v = views[func] = bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write
                                                  for r in rets)
        return v

    class Accesses(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if is_view(func):
                return out
            name = names.get(func)
            if name is None:
                name = names[func] = str(func).encode()
            if name.startswith(b"aten.empty"):
                return out  # an allocation (its ALLOC event), no access
            seen = {}
            for a in tree_flatten((args, kwargs))[0]:
                if isinstance(a, Tensor):
                    p, n = _storage(a)
                    if p:
                        seen[p] = (n, seen.get(p, (0, 0))[1] | READ)
            for i in writes_of(func):
                if i < len(args) and isinstance(args[i], Tensor):
                    p, n = _storage(args[i])
                    if p:
                        seen[p] = (n, seen.get(p, (0, 0))[1] | WRITE)
            for a in tree_flatten(out)[0]:
                if isinstance(a, Tensor):
                    p, n = _storage(a)
                    if p:
                        seen[p] = (n, seen.get(p, (0, 0))[1] | WRITE)
            k = 0
            for p, (n, m) in seen.items():
                if k == _MAX:
                    break
                addrs[k], sizes[k], modes[k] = p, n, m
                k += 1
            fn(5, name, k, addrs, sizes, modes)  # 5: STP_API_OP
            return out

    mode = Accesses()
    mode.__enter__()
    return True

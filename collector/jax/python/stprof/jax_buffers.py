"""stprof.jax_buffers - JAX's buffers as events of their own memory space
(pool STP_POOL_JAX): each buffer's allocation and free, with its size, its
device, and as call path the Python line that produced it, the jitted
function and, where XLA says, the HLO value; recorded through the JAX
backend's entry points in libstprof.so (collector/jax/).

What is seen, at each dispatch (stprof.jax_steps: a top-level call of a
jitted function of the program):
  before it   the arrays made since the last dispatch (jax.live_arrays(),
              newest first: the untracked ones are a prefix), each with
              the traceback JAX keeps for it (where it was made);
  after it    the buffers of donated arguments it consumed (freed now);
              its outputs, each with the frame of the HLO value that makes
              it (op_name, the source line XLA keeps) over the line of the
              call; its temporary buffer (the program's temp bytes, from
              stprof.jax_xla), allocated and freed around the outputs.
A buffer is freed when its array is (a weak reference's callback), or when
a call consumed it (donation).  One array is one buffer per device it
lives on (its addressable shards).

Sizes are what the device holds (on_device_size_in_bytes).  Addresses are
stand-ins by default: a distinct 256-aligned id per buffer at
0x4a58000000000000 (not an address a process can have), since JAX tells a
buffer's address only by waiting until it is allocated, which would change
when the program's work runs; STPROF_JAX_ADDRESSES=real takes the real ones
(unsafe_buffer_pointer) at that cost.  Arrays made and dropped between two
dispatches are not seen.
"""
import ctypes
import itertools
import os
import sys
import weakref

ALLOC, FREE = 1, 2
KIND_HOST, KIND_DEVICE = 0, 1
ADDR_BASE = 0x4a58000000000000
MAX_FRAMES = 24


class Buffers:
    def __init__(self):
        self.on = False
        self.real_addresses = os.environ.get("STPROF_JAX_ADDRESSES") == "real"
        self.ids = itertools.count(1)  # stand-in ids (next() is atomic: threads)
        self.records = {}        # id(array) -> (weakref, [(addr, size, kind, device)])
        self.refs = {}           # id(weakref) -> id(array) (arrays are unhashable)
        self.stacks = {}         # tuple of frame strings -> stack id
        self.code_names = {}     # (code, line) -> "FILE:LINE in FUNCTION"
        self.tb_lines = {}       # (code, lasti) -> line
        self.tb_stacks = {}      # raw frames of a traceback -> stack id
        self.internal = ()       # path prefixes of JAX itself and of this shim
        self.xla = None
        self.jax = None
        self.stack_fn = self.buffer_fn = None

    # ---- set-up
    def start(self, jax, xla):
        try:
            lib = ctypes.CDLL(None)
            self.stack_fn = lib.stprof_jax_stack_v1
            self.buffer_fn = lib.stprof_jax_buffer_v1
        except AttributeError:
            return False
        self.stack_fn.argtypes = [ctypes.c_char_p]
        self.stack_fn.restype = ctypes.c_uint32
        self.buffer_fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64,
                                   ctypes.c_uint32]
        self.buffer_fn.restype = None
        dirs = [os.path.dirname(os.path.abspath(__file__))]
        for m in ("jax", "jaxlib"):
            mod = sys.modules.get(m)
            if mod is not None and getattr(mod, "__file__", None):
                dirs.append(os.path.dirname(os.path.abspath(mod.__file__)))
        self.internal = tuple(d + os.sep for d in dirs)
        self.jax = jax
        self.xla = xla
        self.on = True
        return True

    # ---- call paths
    def _name(self, code, line):
        k = (code, line)
        s = self.code_names.get(k)
        if s is None:
            s = "%s:%d in %s" % (code.co_filename, line, getattr(code, "co_qualname", code.co_name))
            self.code_names[k] = s
        return s

    def _keep(self, frames):
        """(code, line) pairs, innermost first, to frame strings: this shim's
        frames dropped, each run of JAX's own frames cut to its outermost
        (the API the program called), or dropped when that is JAX's
        api_boundary wrapper (a jitted API such as jnp.sin has no Python
        frame of its own: the wrapper would name nothing, and only the
        first call, which compiles, passes through it)."""
        out = []
        pending = None
        for code, line in frames:
            f = code.co_filename
            if f.startswith(self.internal):
                if f.startswith(self.internal[0]):
                    continue
                pending = (code, line)
                continue
            if pending is not None and pending[0].co_name != "reraise_with_filtered_traceback":
                out.append(self._name(*pending))
            pending = None
            out.append(self._name(code, line))
            if len(out) >= MAX_FRAMES:
                break
        if pending is not None and len(out) < MAX_FRAMES and pending[0].co_name != "reraise_with_filtered_traceback":
            out.append(self._name(*pending))
        return out

    def frames_here(self):
        f = sys._getframe(2)
        pairs = []
        while f is not None and len(pairs) < 4 * MAX_FRAMES:
            pairs.append((f.f_code, f.f_lineno))
            f = f.f_back
        return self._keep(pairs)

    def stack_of(self, arr):
        """The stack id of the traceback JAX keeps for an array (arrays made
        at one place share it: cached by the raw frames)."""
        try:
            tb = arr.traceback
            codes, lastis = tb.raw_frames()
        except Exception:
            return 0
        key = (tuple(codes), tuple(lastis))
        s = self.tb_stacks.get(key)
        if s is None:
            s = self.stack(self.frames_of(tb, codes, lastis))
            self.tb_stacks[key] = s
        return s

    def frames_of(self, tb, codes, lastis):
        pairs = []
        for code, lasti in zip(codes, lastis):
            k = (code, lasti)
            line = self.tb_lines.get(k)
            if line is None:
                try:
                    line = type(tb).code_addr2line(code, lasti)
                except Exception:
                    line = code.co_firstlineno
                self.tb_lines[k] = line
            pairs.append((code, line))
        return self._keep(pairs)

    def stack(self, frames):
        key = tuple(frames)
        s = self.stacks.get(key)
        if s is None:
            s = self.stack_fn("\n".join(key).encode("utf-8", "replace")) if key else 0
            self.stacks[key] = s
        return s

    # ---- buffers
    def _buffers(self, arr):
        """[(addr, size, kind, device)] of an array's buffers."""
        out = []
        try:
            shards = [arr] if len(arr.sharding.device_set) == 1 else [s.data for s in arr.addressable_shards]
        except Exception:
            return out
        for a in shards:
            try:
                d = a.sharding._device if hasattr(a.sharding, "_device") else next(iter(a.sharding.device_set))
                size = int(a.on_device_size_in_bytes())
            except Exception:
                continue
            host = d.platform == "cpu"
            hw = getattr(d, "local_hardware_id", None)
            dev = -1 if host else int(hw if hw is not None else d.id)
            if self.real_addresses:
                try:
                    addr = int(a.unsafe_buffer_pointer())
                except Exception:
                    addr = 0
            else:
                addr = ADDR_BASE | (next(self.ids) << 8)
            out.append((addr, size, KIND_HOST if host else KIND_DEVICE, dev))
        return out

    def track(self, arr, stack):
        k = id(arr)
        if k in self.records:
            return
        bufs = self._buffers(arr)
        if not bufs:
            return
        try:
            ref = weakref.ref(arr, self._dead)
        except TypeError:
            return
        for addr, size, kind, dev in bufs:
            self.buffer_fn(ALLOC, kind, dev, addr, size, stack)
        self.records[k] = (ref, bufs)
        self.refs[id(ref)] = k

    def release(self, k):
        rec = self.records.pop(k, None)
        if rec is None:
            return
        self.refs.pop(id(rec[0]), None)
        for addr, size, kind, dev in rec[1]:
            self.buffer_fn(FREE, kind, dev, addr, size, 0)

    def _dead(self, ref):
        try:
            k = self.refs.get(id(ref))
            if k is not None:
                self.release(k)
        except Exception:
            pass

    def temp(self, size, kind, dev, stack):
        addr = ADDR_BASE | (next(self.ids) << 8)
        self.buffer_fn(ALLOC, kind, dev, addr, size, stack)
        return addr

    # ---- around a dispatch (stprof.jax_steps observer)
    def register(self, jitted, fun):
        try:
            code = fun.__code__
            jitted._stprof_def = (code.co_filename, code.co_firstlineno)
        except AttributeError:
            jitted._stprof_def = ("?", 0)

    def before(self, fn, args, kwargs):
        if not self.on:
            return None
        for arr in self.jax.live_arrays():
            if id(arr) in self.records:
                break  # the rest were made before the last dispatch
            self.track(arr, self.stack_of(arr))
        return None

    def after(self, fn, args, kwargs, out, token):
        if not self.on:
            return
        if fn._stprof_donates:
            for x in self.jax.tree_util.tree_leaves((args, kwargs)):
                k = id(x)
                if k in self.records:
                    try:
                        if x.is_deleted():
                            self.release(k)
                    except Exception:
                        pass
        leaves = [x for x in self.jax.tree_util.tree_leaves(out) if hasattr(x, "on_device_size_in_bytes")]
        prog = self.xla.program_of(fn, leaves) if self.xla is not None else None
        here = self.frames_here()
        base = self.stack(here)
        dfile, dline = getattr(fn, "_stprof_def", ("?", 0))
        n_out = len(prog.outputs) if prog is not None and len(prog.outputs) == len(leaves) else 0
        kind, dev = KIND_HOST, -1
        for i, x in enumerate(leaves):
            if id(x) in self.records:
                continue  # an argument handed back
            st = base
            if n_out:
                v = prog.outputs[i] or ("", "", 0, "")
                op, f, line, func = v
                top = "%s:%d in %s [%s, output %d]" % (f or dfile, line or dline, func or fn._stprof_name,
                                                       op or fn._stprof_phase, i)
                st = self.stack([top] + here)
            self.track(x, st)
            rec = self.records.get(id(x))
            if rec is not None:
                kind, dev = rec[1][0][2], rec[1][0][3]
        if prog is not None and prog.temp:
            top = "%s:%d in %s [temporaries of %s]" % (dfile, dline, fn._stprof_name, fn._stprof_phase)
            addr = self.temp(prog.temp, kind, dev, self.stack([top] + here))
            self.buffer_fn(FREE, kind, dev, addr, prog.temp, 0)


BUFFERS = Buffers()

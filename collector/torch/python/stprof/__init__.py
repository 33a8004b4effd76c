"""stprof - the Python side of the stprof profiler.

Under `stprof python3 script.py` this package is importable with no change to
the script, and marks, through the collector's one C entry point
(stprof_mark_v1, found with ctypes in the running process):

  - iterations: each torch.optim.Optimizer.step (all optimizers) ends one,
    or with several optimizers the step of the last of their cycle; the next
    begins with the next forward, backward or step.  A loop with no
    optimizer calls stprof.step() at the end of each iteration;
  - phases per micro-batch: "forward" from a root module's forward (a module
    called outside any other, the one with the most submodules) until the
    backward; "backward" for torch.autograd.backward/grad; "optimizer" for
    the step; "recompute" for a module run during a backward (activation
    checkpointing), nested in the backward;
  - modules: enter/exit of every submodule's forward by its qualified name
    ("layers.0.attn"), from the global module hooks.

A JAX program gets the same without a change (stprof.jax_install): its
jitted step function's calls are the iterations, each jitted call a phase,
JAX's buffers a memory space of their own (docs/jax.md).

Without the collector every function here does nothing.
"""
import ctypes
import sys

# Marker kinds, as in include/stprof/stprof.h.
ITER_BEGIN, ITER_END, PHASE_BEGIN, PHASE_END, MODULE_ENTER, MODULE_EXIT, ANNOTATION = 1, 2, 3, 4, 5, 6, 7

_fn = None
_fast = None  # the collector's builtin mark(kind, name, value), or False


def _resolve():
    global _fn
    if _fn is None:
        try:
            f = ctypes.CDLL(None).stprof_mark_v1
            f.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int64]
            f.restype = None
            _fn = f
        except (AttributeError, OSError):
            _fn = False
    return _fn


def fast_mark():
    """The collector's marker entry point as a builtin function (called
    like mark below, a str name as it is: collector/core/pymark.c), where
    this collector has one; else mark itself; None without the collector.
    For hot paths: a call costs a tenth of mark's through ctypes."""
    global _fast
    if _fast is None:
        _fast = False
        if _resolve():
            try:
                g = ctypes.PyDLL(None).stprof_py_mark_fn_v1
                g.argtypes = []
                g.restype = ctypes.c_void_p
                if g():  # NULL: this Python lacks what it needs
                    g.restype = ctypes.py_object
                    _fast = g()
            except (AttributeError, OSError, ValueError):
                pass
    if _fast:
        return _fast
    return mark if _resolve() else None


def mark(kind, name=None, value=0):
    """Records one marker (kinds above); nothing without the collector."""
    f = _fn if _fn is not None else _resolve()
    if f:
        f(kind, name.encode() if isinstance(name, str) else name, value)


def active():
    """True when the program runs under the stprof collector."""
    return bool(_fn if _fn is not None else _resolve())


def step():
    """Ends the current training iteration (for loops without an optimizer;
    in a JAX program, where no jitted step function is recognized)."""
    if "stprof.jax_steps" in sys.modules and "torch" not in sys.modules:
        from . import jax_steps
        jax_steps.step()
        return
    from . import torch_markers
    torch_markers.STATE.end_iteration()


def annotate(name, value=0):
    mark(ANNOTATION, name, value)


def _probe():
    """Lets the collector find where this Python keeps its frames, so that it
    reads every thread's frames without the GIL (called with the GIL held:
    PyDLL), and records how it reads them (annotation stprof.python_frames:
    2 in place, 3 only with the GIL; docs/python.md).  Returns True when in
    place."""
    try:
        f = ctypes.PyDLL(None).stprof_py_probe_v1
    except (AttributeError, OSError):
        return False
    f.restype = ctypes.c_int
    how = f()
    annotate("stprof.python_frames", how)
    return how == 2


def _arm():
    """Installs the PyTorch markers when torch is imported (or now, if it is)."""
    if not active():
        return
    _probe()
    from . import torch_markers
    if "torch" in sys.modules and hasattr(sys.modules["torch"], "optim"):
        torch_markers.install(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, torch_markers.TorchImportHook())
    try:
        from . import jax_install
    except ImportError:  # a shim without the JAX parts
        return
    jax_install.arm()

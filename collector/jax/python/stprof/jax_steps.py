"""stprof.jax_steps - iterations and phases of a JAX program as stprof
markers, and the one hook around each call of a jitted function that the
buffer and XLA recorders hang on (stprof.jax_buffers, stprof.jax_xla);
no change to the program.

install(jax) runs right after `import jax` has run jax/__init__.py:

  - jax.jit is replaced by a function that jits exactly as before and wraps
    what it returns.  A call of the wrapper made at the top level (not from
    inside another jitted function's call or trace, and not on tracers) is
    a *dispatch*: phase "jit(NAME)" around it (value: the calls of NAME the
    current iteration made before), the recorders' before/after hooks.
    Everything else (lower, trace, eval_shape, clear_cache, methods) goes
    to the real jitted function.  JAX's own uses of jit (jax.numpy's
    functions) keep the real one: they are bound at import.
  - The step function, whose calls make the iterations: the first jitted
    function called with one of the arrays its previous call returned (a
    training step threads its state: state, loss = step(state, batch));
    failing that, once a function has been called FALLBACK_CALLS times, the
    least called of those called twice or more (an outer loop's function is
    called less often than the micro-batch loop's inside it); a function
    that threads its state later still takes over from such a choice (once;
    the iterations marked before stay).  Annotation "jax.step" (the value:
    the iteration it starts from) names the choice.  Each call of
    it ends an iteration (ITER_END k, then ITER_BEGIN k+1 at once, as
    PyTorch's optimizer step does in stprof.torch_markers), so the batch
    made before a call belongs to the iteration that call ends; the first
    iteration is the call that revealed it.  stprof.step() ends one by hand.
  - jax.profiler.StepTraceAnnotation(name, step_num=k) makes iteration k
    when the program uses it (the rule above then stands down);
    jax.profiler.TraceAnnotation(name) is phase NAME.

Markers never change what the program computes; an error here is reported
once on stderr and the hooks stand down, the program's own exceptions pass
through untouched.
"""
import functools
import sys
import threading
import types
import weakref

from . import ANNOTATION, ITER_BEGIN, ITER_END, PHASE_BEGIN, PHASE_END, mark

FALLBACK_CALLS = 8
_OUT_REFS = 16  # output leaves remembered per function to spot state threading


def _warn(msg):
    sys.stderr.write("stprof: %s\n" % msg)


class _State:
    def __init__(self):
        self.lock = threading.RLock()
        self.tls = threading.local()
        self.enabled = True
        self.observers = []       # objects with before(fn, args) and after(fn, args, out, token)
        self.step = None          # the step function's wrapper, once known
        self.seen = {}            # id -> wrapper called before the step was known
        self.sure = False         # the step threads its state: no more looking
        self.annotated = False    # the program marks its steps (StepTraceAnnotation)
        self.iteration = 0
        self.in_iter = False
        self.calls = {}           # name -> calls in the current iteration
        self.leaves = None        # jax.tree_util.tree_leaves
        self.clean = lambda: True # jax's "no trace in progress"

    def fail(self, where, e):
        if self.enabled:
            self.enabled = False
            _warn("JAX hooks disabled (%s: %s)" % (where, e))

    # ---- iterations
    def begin_iteration(self):
        if not self.in_iter:
            self.in_iter = True
            self.calls = {}
            mark(ITER_BEGIN, None, self.iteration)

    def end_iteration(self, next_begins=True):
        with self.lock:
            self.begin_iteration()
            mark(ITER_END, None, self.iteration)
            self.iteration += 1
            self.in_iter = False
            if next_begins:
                self.begin_iteration()

    # ---- the step function
    def threads_state(self, fn, args):
        refs = fn._stprof_out
        if not refs:
            return False
        alive = set()
        for r in refs:
            o = r()
            if o is not None:
                alive.add(id(o))
        if not alive:
            return False
        for x in self.leaves(args):
            if id(x) in alive:
                return True
        return False

    def choose_step(self, fn, args, kwargs):
        """Called before each dispatch while the step is not known for sure."""
        self.seen[id(fn)] = fn
        if self.threads_state(fn, (args, kwargs)):
            if self.step is not fn:
                if self.in_iter and self.step is not None:
                    self.end_iteration(next_begins=False)
                self.step = fn
                mark(ANNOTATION, "jax.step " + fn._stprof_phase, self.iteration)
            self.sure = True
        elif self.step is None and fn._stprof_calls >= FALLBACK_CALLS:
            repeated = [f for f in self.seen.values() if f._stprof_calls >= 2]
            self.step = min(repeated, key=lambda f: f._stprof_calls)
            mark(ANNOTATION, "jax.step " + self.step._stprof_phase, self.iteration)

    def remember_out(self, fn, out):
        refs = []
        for x in self.leaves(out):
            try:
                refs.append(weakref.ref(x))
            except TypeError:  # a Python scalar, None
                continue
            if len(refs) == _OUT_REFS:
                break
        fn._stprof_out = refs

    # ---- a dispatch
    def call(self, fn, args, kwargs):
        tls = self.tls
        if getattr(tls, "depth", 0) or not self.enabled or not self.clean():
            return fn._stprof_f(*args, **kwargs)
        tls.depth = 1
        phase = None
        token = None
        try:
            try:
                with self.lock:
                    fn._stprof_calls += 1
                    if not self.sure and not self.annotated:
                        self.choose_step(fn, args, kwargs)
                    if self.step is fn:
                        self.begin_iteration()
                    k = self.calls.get(fn._stprof_name, 0)
                    self.calls[fn._stprof_name] = k + 1
                    phase = (fn._stprof_phase, k)
                mark(PHASE_BEGIN, phase[0], phase[1])
                token = [o.before(fn, args, kwargs) for o in self.observers]
            except Exception as e:
                self.fail("before a call of %s" % fn._stprof_name, e)
            out = fn._stprof_f(*args, **kwargs)
            try:
                if token is not None:
                    for o, t in zip(self.observers, token):
                        o.after(fn, args, kwargs, out, t)
                if not self.sure and not self.annotated:
                    self.remember_out(fn, out)
            except Exception as e:
                self.fail("after a call of %s" % fn._stprof_name, e)
            return out
        finally:
            tls.depth = 0
            if phase is not None:
                mark(PHASE_END, phase[0], phase[1])
                if self.step is fn and self.enabled:
                    self.end_iteration()


STATE = _State()


class Jitted:
    """What the replaced jax.jit returns: the real jitted function, called
    through STATE.call; every other attribute is the real one's."""

    def __init__(self, f, fun):
        self._stprof_f = f
        name = getattr(fun, "__name__", None) or getattr(f, "__name__", None) or "fn"
        self._stprof_name = name
        self._stprof_phase = "jit(%s)" % name
        self._stprof_calls = 0
        self._stprof_out = None
        self._stprof_donates = False
        try:
            functools.update_wrapper(self, f, updated=())
        except Exception:
            pass

    def __call__(self, *args, **kwargs):
        return STATE.call(self, args, kwargs)

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    def __getattr__(self, name):
        if name.startswith("_stprof"):
            raise AttributeError(name)
        return getattr(self._stprof_f, name)

    def __repr__(self):
        return repr(self._stprof_f)


def _wrap_jit(real_jit):
    @functools.wraps(real_jit)
    def jit(fun=None, *args, **kwargs):
        if fun is None:  # jax.jit(static_argnums=...) used as a decorator factory
            return functools.partial(jit, *args, **kwargs)
        f = real_jit(fun, *args, **kwargs)
        try:
            j = Jitted(f, fun)
            j._stprof_donates = bool(kwargs.get("donate_argnums") or kwargs.get("donate_argnames"))
            for o in STATE.observers:
                reg = getattr(o, "register", None)
                if reg is not None:
                    reg(j, fun)
            return j
        except Exception as e:
            STATE.fail("jax.jit", e)
            return f
    jit._stprof = True
    return jit


def _wrap_annotations(profiler):
    real_trace = profiler.TraceAnnotation
    real_step = profiler.StepTraceAnnotation

    class TraceAnnotation(real_trace):
        def __init__(self, name, **kwargs):
            super().__init__(name, **kwargs)
            self._stprof_name = str(name)

        def __enter__(self):
            mark(PHASE_BEGIN, self._stprof_name, 0)
            return super().__enter__()

        def __exit__(self, *exc):
            r = super().__exit__(*exc)
            mark(PHASE_END, self._stprof_name, 0)
            return r

    class StepTraceAnnotation(real_step):
        def __init__(self, name, **kwargs):
            super().__init__(name, **kwargs)
            self._stprof_step = kwargs.get("step_num")

        def __enter__(self):
            with STATE.lock:
                STATE.annotated = True
                if isinstance(self._stprof_step, int):
                    STATE.iteration = self._stprof_step
                STATE.begin_iteration()
            return super().__enter__()

        def __exit__(self, *exc):
            r = super().__exit__(*exc)
            STATE.end_iteration(next_begins=False)
            return r

    TraceAnnotation.__name__ = TraceAnnotation.__qualname__ = "TraceAnnotation"
    StepTraceAnnotation.__name__ = StepTraceAnnotation.__qualname__ = "StepTraceAnnotation"
    TraceAnnotation.__doc__ = real_trace.__doc__
    StepTraceAnnotation.__doc__ = real_step.__doc__
    profiler.TraceAnnotation = TraceAnnotation
    profiler.StepTraceAnnotation = StepTraceAnnotation


def install(jax, observers=()):
    """Wraps jax.jit and the profiler's annotations once."""
    if getattr(jax.jit, "_stprof", False):
        return
    import jax.tree_util
    STATE.leaves = jax.tree_util.tree_leaves
    try:
        from jax._src import core
        STATE.clean = core.trace_state_clean
    except (ImportError, AttributeError):
        pass
    STATE.observers = [o for o in observers if o is not None]
    jax.jit = _wrap_jit(jax.jit)
    try:
        _wrap_annotations(jax.profiler)
    except Exception as e:  # an older JAX without them
        _warn("JAX profiler annotations not marked (%s)" % e)


def step():
    """stprof.step() in a JAX program: ends the current iteration."""
    STATE.end_iteration()

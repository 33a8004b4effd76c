"""stprof.torch_markers - iterations, micro-batches, phases and module names
of a PyTorch program, as stprof markers, with no change to the program.
install() first sets who records the CUDA memory (stprof.torch_cuda).

State machine (one per process; PyTorch's CPU autograd runs on the calling
thread, and module hooks of a backward's recomputation on the thread running
the backward):

  idle --forward/backward/step--> in iteration k (ITER_BEGIN k)
  root forward pre-hook  -> phase "forward" of micro-batch m: m counts the
                            backwards begun in the iteration so far (the
                            forward a backward follows); a forward under
                            no_grad, or of a module in eval() mode
                            (evaluation), starts no iteration and no phase;
                            a forward no backward follows (an initial loss
                            printed before the loop) is no micro-batch
  autograd.backward/grad -> phase "backward" of micro-batch m, then m + 1
                            (nested calls, as activation checkpointing's
                            reentrant backward makes, are part of it)
  module run inside a backward -> phase "recompute", nested in "backward"
  Optimizer.step         -> phase "optimizer" n (the iteration's n-th
                            step, from 0; a step given a closure, which
                            runs the forward and backward itself, opens
                            it when the closure's backward ends), then
                            ITER_END k and at
                            once ITER_BEGIN k+1 (the iteration after the
                            last step is never ended: the detector drops
                            an open iteration that follows an ended one).
                            Several optimizers (a GAN's generator and
                            discriminator, one for the embeddings): the
                            step that completes the set of optimizers
                            made (and alive) ends the first iteration (or,
                            where one made does not step, the step after
                            LEARN_STEPS of one that stepped before); from
                            then on only the step of the optimizer that
                            first stepped last (the cycle's last) does, so
                            one iteration is one training step.
                            An optimizer not in the cycle that steps (one
                            for parameters trained from step N on) joins
                            it as its last; one made once the cycle is
                            known holds the cycle's last step's end once,
                            so the step that makes it is one iteration;
                            the last one gone (replaced for a second
                            stage) learns the cycle again.
  no Optimizer.step      -> once STEPLESS_AFTER backwards have run and no
                            step was seen (a compiled optimizer step, whose
                            hooks TorchDynamo traced away; parameters
                            updated by hand; an optimizer of another
                            library), the root forward that follows a
                            backward ends the iteration (ITER_END k,
                            ITER_BEGIN k+1): iterations, and with them
                            folding and lean iterations, for such loops
                            too.  Iteration 0 then holds the first
                            STEPLESS_AFTER backwards; a step seen later
                            ends iterations again from then on.

  inference              -> in a process that has not trained (no backward,
                            no step), once INFER_AFTER root forwards have
                            run under no_grad or in eval() mode, each one
                            begins an iteration (ITER_END k, ITER_BEGIN
                            k+1) with its phase "forward" 0, numbered by
                            forward from 0 (the first is INFER_AFTER): a batch
                            inference or evaluation script gets
                            iterations, and with them folding.  Once it
                            trains, forwards under no_grad are evaluation
                            again (no iteration).  Not lean: the module
                            hooks stay.

  DataLoader worker      -> each batch it fetches begins an iteration of the
                            worker's own trace (ITER_END k, ITER_BEGIN k+1
                            at the next fetch; the last is never ended),
                            its phase "fetch" 0 the fetch itself (dataset
                            and collate; sending the batch is not in it), so
                            a worker's steady batches are folded as the
                            loop's steps are: without them a worker's trace
                            grew by every tensor of every batch for the whole
                            run.  The state the worker inherited from the
                            loop (fork) is dropped at its first batch.

One phase is open at a time (the next one closes it); markers never change
what the program computes.

Lean iterations (docs/record.md): at each iteration boundary the shim asks
the collector (stprof_lean_v1) whether the next iteration is recorded lean,
as it is once the loop's iterations repeat.  While it is, the shim hands
out no backward sites (the collector takes a lean iteration's tensor paths,
sites included, from the last full iteration: collector/torch/torch_lean.c)
and, unless the iteration before recomputed (activation checkpointing,
whose phase needs the module hooks), it takes its module hooks away: the
modules run on PyTorch's hook-free path (the hooks cost a small model's
step more than the rest of the shim).  A pre-hook waits for the root
module's forward, opens its phase as `pre` does, and goes (it comes back
after each backward, for the next micro-batch's forward; an evaluation's
forward brings the module hooks back until the boundary).  Not once
torch.compile has compiled a frame (its guards watch the global hooks).
So a lean iteration has the iteration and phase markers of a full one and
no module markers; the collector leaves module markers out of an
iteration's digest (collector/core/fold.c), and PyTorch's dispatch frames,
which differ with and without hooks, out of every call path
(stprof_py_skip_code_v1, collector/core/pyskip.c).  The full hooks come
back at the first boundary that is not lean.

For the tensors a backward makes, the forward hook also hands the collector
each module's output nodes (stprof_py_module_site_v1: the module's name and
the line that called it) and hooks each such node so that the thread that
runs it in the backward says so first (stprof_py_backward_site_v1): the
tensors it makes then are charged to that module and line
(collector/core/pybackward.c).  A node is tagged once, by the innermost
module whose output it is; a module run inside a backward (a checkpoint's
recomputation) clears the thread's site.  The hook returns None: the
gradients are not touched.  Works with PyTorch 1.13 (optimizer classes'
step wrapped once, at the first construction) and 2.x (the global optimizer
step hooks).
"""
import functools
import os
import sys
import threading
import weakref

from .importhook import ImportHook
from . import ITER_BEGIN, ITER_END, PHASE_BEGIN, PHASE_END, MODULE_ENTER, MODULE_EXIT, mark, fast_mark


class _State:
    def __init__(self):
        self.iteration = 0
        self.in_iter = False
        self.micro_batch = 0     # backwards begun in this iteration
        self.phase = None        # (name, micro_batch) open now
        self.stack = []          # modules being run (per process)
        self.marked = []         # ... each: whether its MODULE_ENTER was marked
        self.root = None         # weakref to the root module
        self.root_size = 0
        self.root_trains = False  # the root has run with gradients, in train() mode
        self.top_sizes = weakref.WeakKeyDictionary()  # modules run at the top level: their sizes
        self.names = weakref.WeakKeyDictionary()
        self.name_cache = {}     # id(module) -> (weakref, name): name_of's
        self.bwd_depth = 0
        self.backwards = 0       # backwards begun in the run
        self.stepped = False     # an optimizer step hook has run
        self.infer_forwards = 0  # root forwards under no_grad or eval() before any training
        self.optimizers = []     # weakrefs, in the order they first stepped
        self.closing = None      # the one whose step ends an iteration, once known
        self.made = weakref.WeakSet()  # the optimizers made (and alive)
        self.fresh = weakref.WeakSet()  # made once the cycle was known, not stepped yet
        self.deferred = False    # the cycle's last stepped, waiting for a fresh one
        self.opt_steps = 0       # optimizer steps begun in this iteration
        self.in_step = 0         # optimizer steps under way (a closure's backward inside)
        self.step_phase = 0      # the optimizer phase of the step under way
        self.worker_pid = 0      # this process is a DataLoader worker: its pid
        self.recompute_depth = 0
        self.lock = threading.RLock()
        self.grad_enabled = lambda: True
        self.tensor_type = ()
        self.lean = False        # the iteration under way is recorded lean
        self.light = False       # ... and without module hooks
        self.recomputed = False  # a recompute phase since the last boundary
        self.mm = None           # torch.nn.modules.module, once installed
        self.hooks = None        # the module hooks' handles (pre, post)
        self.waiter = None       # pre_light's handle while it waits
        self.can_light = False   # the collector leaves dispatch frames out
        # STPROF_LEAN_HOOKS=1 keeps the module hooks in lean iterations
        self.light_off = os.environ.get("STPROF_LEAN_HOOKS") == "1"

    # ---- iterations and phases
    def begin_iteration(self):
        if not self.in_iter:
            self.in_iter = True
            self.micro_batch = 0
            self.opt_steps = 0
            mark(ITER_BEGIN, None, self.iteration)

    def stepless_boundary(self, module):
        """A root training forward that ends the iteration of a loop with no
        optimizer step (see the top)."""
        return (not self.stepped and self.micro_batch > 0 and self.backwards >= STEPLESS_AFTER
                and self.root is not None and self.root() is module
                and self.grad_enabled() and getattr(module, "training", True))

    def worker_batch(self):
        """A DataLoader worker begins to fetch a batch: the next iteration
        of its trace (see the top)."""
        with self.lock:
            pid = os.getpid()
            if self.worker_pid != pid:  # the loop's state, inherited by fork
                self.worker_pid = pid
                self.iteration, self.in_iter, self.phase, self.stack, self.marked = 0, False, None, [], []
                self.micro_batch = self.bwd_depth = self.recompute_depth = 0
            self.next_iteration("fetch")

    def close_iteration(self):
        """Ends the iteration under way (its phase first)."""
        self.close_phase()
        mark(ITER_END, None, self.iteration)
        self.iteration += 1
        self.in_iter = False

    def next_iteration(self, phase):
        """Ends the iteration under way, if any, and begins the next one
        with its phase (a worker's fetch, an inference forward)."""
        if self.in_iter:
            self.close_iteration()
        self.begin_iteration()
        self.open_phase(phase, 0)

    def close_stale(self, module=None, inclusive=True):
        """Pops the stack down to module (inclusive: it too; None: all of
        it), marking the exit of each module popped whose entry was marked.
        Those are modules whose forward raised: PyTorch 1.x runs no forward
        hook then, and a program that catches the exception goes on (a
        batch-size finder's refused batch; a recomputation stopped early).
        Without their exits, every module after counted in the one that
        raised."""
        while self.stack:
            if not inclusive and self.stack[-1] is module:
                return
            m = self.stack.pop()
            if self.marked.pop():
                mark(MODULE_EXIT, self.name_of(m), 0)
            if m is module:
                return

    def worker_batch_done(self):
        with self.lock:
            self.close_phase()

    def end_iteration(self):
        if _IS_COMPILING():
            return
        with self.lock:
            self.begin_iteration()
            self.close_iteration()
            self.close_stale()
            self.in_step = 0
            self.deferred = False
            # the next iteration starts now (its data loading is part of
            # it); one never ended is dropped by the detector
            self.begin_iteration()
            if _LEAN is not None:
                self.sync_lean()

    def inference_forward(self):
        """The root module's forward under no_grad or in eval() mode, before
        any backward or step: once INFER_AFTER such forwards have run, each
        begins an iteration of its own (see the top)."""
        self.infer_forwards += 1
        if self.infer_forwards > INFER_AFTER:
            if not self.in_iter and self.iteration == 0:
                # numbered by forward, from 0: iteration k is the program's
                # k-th request (a finding "from iteration 100" is request 100)
                self.iteration = self.infer_forwards - 1
            self.next_iteration("forward")

    def step_end(self, opt):
        """After opt's step: the iteration ends at each step until the
        cycle of optimizers is known, then at its last one's (see the top)."""
        if _IS_COMPILING():
            return
        with self.lock:
            self.in_step = max(self.in_step - 1, 0)
            self.fresh.discard(opt)
            closing = self.closing() if self.closing is not None else None
            known = any(r() is opt for r in self.optimizers)
            if self.closing is not None and closing is None:
                # the cycle's last optimizer is gone (replaced): learn again
                self.optimizers, self.closing, known = [], None, False
            if self.closing is None and known:  # one steps again
                if self.opt_steps < LEARN_STEPS and not self.all_made_stepped():
                    return  # one made has not stepped (a WGAN's generator, after 5 critic steps)
                self.closing = self.optimizers[-1]  # the cycle: those that stepped
                closing = self.closing()
            elif not known:  # learning, or a new one joins the cycle as its last
                try:
                    ref = weakref.ref(opt)
                except TypeError:
                    ref = None
                self.optimizers = [r for r in self.optimizers if r() is not None]
                if ref is not None:
                    self.optimizers.append(ref)
                if self.closing is not None:
                    self.closing, closing = ref, opt
                elif ref is not None and self.all_made_stepped():
                    self.closing, closing = ref, opt  # the cycle: every optimizer there is
                elif ref is not None:
                    return  # an optimizer made has not stepped yet: the iteration goes on
            if closing is not None and closing is not opt:
                return  # the step of an optimizer before the cycle's last
            if closing is opt and len(self.fresh):
                if not self.deferred:
                    # one made in this step (a generator trained from step
                    # N on, its optimizer made then) steps after it and
                    # joins the cycle as its last: the step is one iteration
                    self.deferred = True
                    return
                self.fresh.clear()  # it did not step within the step: no more waiting
        self.end_iteration()

    def all_made_stepped(self):
        """Whether every optimizer alive that was made has stepped: while
        the cycle is learned, the iteration ends at the step that completes
        it (a GAN's first training step is one iteration, not two halves)."""
        stepped = set(id(r()) for r in self.optimizers)
        return all(id(o) in stepped for o in list(self.made))

    def sync_lean(self):
        """At an iteration boundary: whether the iteration begun is
        recorded lean, and if so without module hooks."""
        self.lean = bool(_LEAN())
        light = (self.lean and self.can_light and not self.recomputed and not self.light_off
                 and not _compiled()
                 and self.mm is not None
                 and self.root is not None and self.root() is not None)
        self.recomputed = False
        if light and not self.light:
            self.remove_hooks()
        elif self.light and not light:
            self.hooks_back()
        self.light = light
        if light:
            self.await_root()

    def add_hooks(self):
        """The global module hooks (pre, post), unless they are there.  The
        post hook runs when a forward raises too (PyTorch 2.1 on): non-
        reentrant checkpointing stops its recomputation by raising inside
        the module once it has the tensors it needs, and the node that
        unpacked them goes on with its module's site."""
        if self.hooks is None:
            pre = self.mm.register_module_forward_pre_hook(self.pre)
            try:
                post = self.mm.register_module_forward_hook(self.post, always_call=True)
            except TypeError:  # PyTorch 1.x, 2.0
                post = self.mm.register_module_forward_hook(self.post)
            self.hooks = (pre, post)

    def remove_hooks(self):
        for h in self.hooks or ():
            h.remove()
        self.hooks = None

    def hooks_back(self):
        """The module hooks again, the waiter gone."""
        self.drop_waiter()
        self.add_hooks()
        self.light = False

    def await_root(self):
        if self.waiter is None:
            self.waiter = self.mm.register_module_forward_pre_hook(self.pre_light)

    def drop_waiter(self):
        if self.waiter is not None:
            self.waiter.remove()
            self.waiter = None

    def pre_light(self, module, inputs):
        """The only module hook of a lean iteration, there while the root
        module's forward is awaited: opens its phase as pre does, then goes,
        so that the modules it runs take PyTorch's hook-free path."""
        if _IS_COMPILING():
            return  # traced by torch.compile: see _compiling_fn
        with self.lock:
            if not self.light or self.bwd_depth:
                return
            if module is not self.root():
                try:
                    seen = module in self.top_sizes
                except TypeError:
                    seen = True
                if not seen:
                    # a model not run yet at the top level (an EMA copy
                    # first evaluated after the loop went lean): the module
                    # hooks back until the boundary, this call's pre hook
                    # too, so that it is named as in a full iteration
                    self.hooks_back()
                    self.pre(module, inputs)
                return
            if not self.grad_enabled() or not getattr(module, "training", True):
                # an evaluation (an iteration unlike the full ones): its
                # modules marked, as in a full iteration, until the boundary
                self.hooks_back()
                return
            if self.stepless_boundary(module):
                self.end_iteration()
                if not self.light:  # a full iteration: pre missed the root
                    self.stack.append(module)
                    self.marked.append(False)
                    self.open_phase("forward", self.micro_batch)
                    return
            self.begin_iteration()
            self.open_phase("forward", self.micro_batch)
            self.drop_waiter()

    def open_phase(self, name, mb):
        if self.phase == (name, mb):
            return  # a forward no backward followed, then the one it does: one window
        self.close_phase()
        self.phase = (name, mb)
        mark(PHASE_BEGIN, name, mb)

    def close_phase(self):
        if self.phase is not None:
            mark(PHASE_END, self.phase[0], self.phase[1])
            self.phase = None

    # ---- modules
    def name_of(self, module):
        # by id first (a hook runs this twice a module call; a weak key's
        # lookup makes a weakref each time), checked against the module
        e = self.name_cache.get(id(module))
        if e is not None and e[0]() is module:
            return e[1]
        n = self.names.get(module)
        if n is None:
            n = type(module).__name__
        if len(self.name_cache) >= 65536:  # modules made per call: ids go stale
            self.name_cache.clear()
        try:
            self.name_cache[id(module)] = (weakref.ref(module), n)
        except TypeError:
            pass
        return n

    def learn_names(self, module):
        """Names module's submodules the first time it runs at the top level
        (name_top); module becomes the root if it has the most submodules
        of any module run at the top level, those run training (with
        gradients, in train() mode) first: a distilling teacher run under
        no_grad is not the root, its student is.  Whether it is the root."""
        cur = self.root() if self.root is not None else None
        trains = self.grad_enabled() and getattr(module, "training", True)
        if cur is module:
            self.root_trains = self.root_trains or trains
            return True
        size = self.top_sizes.get(module)
        if size is None:
            size = self.name_top(module)
            if size < 0:
                return False
            try:
                self.top_sizes[module] = size
            except TypeError:
                pass
        if cur is not None and (trains, size) <= (self.root_trains, self.root_size):
            return False
        self.root, self.root_size, self.root_trains = weakref.ref(module), size, trains
        return True

    def name_top(self, module):
        """Qualified names of the submodules of a module run at the top
        level, given once; the number of its modules, or -1.  A module run
        from a method of a module that holds it (a LightningModule's
        training_step running self.net) is named within that module
        ("net.0"); a model run beside other models (a GAN's generator and
        discriminator, a teacher and its student, an EMA copy: modules with
        parameters the calling code also holds, neither inside the other)
        has its variable's name in front ("D.0"); the model of a program
        that has one is named as before ("0", "layers.3.attn").  A module
        already named inside a bigger one keeps that name."""
        try:
            mods = list(module.named_modules())
        except Exception:
            return -1
        n = len(mods)
        if module in self.names:
            return n
        frame = _caller_frame()
        container = frame.f_locals.get("self") if frame is not None else None
        prefix = ""
        if container is not module and isinstance(container, self.mm.Module) \
                and any(m is module for m in container.modules()):
            mods = list(container.named_modules())
        else:
            if frame is not None and _has_parameters(module):
                try:
                    prefix = _model_name(frame, module, self.mm.Module)
                except Exception:  # an odd object in the caller's variables
                    prefix = ""
        for name, m in mods:
            if prefix:
                name = prefix + "." + name if name else prefix
            if name:
                self.names[m] = name
        self.name_cache.clear()
        return n

    def pre(self, module, inputs):
        if _IS_COMPILING():
            return  # traced by torch.compile: see _compiling_fn
        with self.lock:
            if any(m is module for m in self.stack):
                self.close_stale(module)
            top = not self.stack
            if top and not self.bwd_depth and self.stepless_boundary(module):
                self.end_iteration()
                if self.light:  # lean from here: the root's forward is under way
                    self.drop_waiter()
            self.stack.append(module)
            if top and self.bwd_depth:
                self.recompute_depth += 1
                if self.recompute_depth == 1:
                    self.recomputed = True
                    mark(PHASE_BEGIN, "recompute", max(self.micro_batch - 1, 0))
            elif top and self.learn_names(module):
                if self.grad_enabled() and getattr(module, "training", True):
                    self.begin_iteration()
                    self.open_phase("forward", self.micro_batch)
                elif not self.backwards and not self.stepped:
                    # (a forward under no_grad, or in eval() mode, is
                    # evaluation: no iteration, no micro-batch; unless
                    # nothing has trained yet: inference)
                    self.inference_forward()
            marked = not top or self.bwd_depth or self.root is None or self.root() is not module
            self.marked.append(marked)
            if marked:
                mark(MODULE_ENTER, self.name_of(module), 0)
            if self.bwd_depth and _USE_SITE is not None:
                _USE_SITE(0)  # a recomputation's tensors keep their own lines

    def post(self, module, inputs, output):
        if _IS_COMPILING():
            return  # traced by torch.compile: see _compiling_fn
        with self.lock:
            if not any(m is module for m in self.stack):
                return  # its exit was marked when the stack was closed under it
            # pop down to this module (a forward that raised left others)
            self.close_stale(module, inclusive=False)
            self.stack.pop()
            top = not self.stack
            if self.marked.pop():
                mark(MODULE_EXIT, self.name_of(module), 0)
            if top and self.bwd_depth and self.recompute_depth:
                self.recompute_depth -= 1
                if not self.recompute_depth:
                    mark(PHASE_END, "recompute", max(self.micro_batch - 1, 0))
                    if _USE_SITE is not None:
                        # the node whose saved tensors were recomputed
                        # (non-reentrant checkpointing recomputes when its
                        # first node unpacks them) goes on with its site
                        _USE_SITE(getattr(_SITE, "v", 0))
        if _MODULE_SITE is not None and not self.lean and self.grad_enabled():
            self.tag_backward(module, output)

    def tag_backward(self, module, output):
        """Hooks the autograd nodes of module's output not tagged yet (an
        inner module's output is tagged by it first)."""
        T = self.tensor_type
        if isinstance(output, T):
            outs = (output,)
        elif isinstance(output, (tuple, list)):
            outs = output
        elif isinstance(output, dict):
            outs = output.values()
        else:
            return
        site = 0
        for t in outs:
            node = t.grad_fn if isinstance(t, T) else None
            if node is None:
                continue
            try:
                md = node.metadata
                if "stprof" in md:
                    continue
                if not site:
                    site = _MODULE_SITE(self.name_of(module).encode())
                    if not site:
                        return
                md["stprof"] = site
                node.register_prehook(_site_hook(site))
            except (AttributeError, RuntimeError, TypeError):
                _disable_sites()  # a PyTorch whose nodes take no pre-hooks
                return

    # ---- autograd
    def backward_begin(self):
        with self.lock:
            self.bwd_depth += 1
            if self.bwd_depth == 1:
                self.backwards += 1
                self.begin_iteration()
                self.close_stale()
                self.open_phase("backward", self.micro_batch)
                self.micro_batch += 1

    def end_recompute(self):
        """A recomputation that ended without its top module's post hook:
        PyTorch 2.x's non-reentrant checkpoint stops recomputing (an
        exception inside the module) once it has the tensors it needs.  Its
        phase ends when the next tagged node runs or the backward ends;
        the modules it left on the stack go."""
        with self.lock:
            if self.recompute_depth:
                self.recompute_depth = 0
                self.close_stale()
                mark(PHASE_END, "recompute", max(self.micro_batch - 1, 0))

    def backward_end(self):
        self.end_recompute()
        with self.lock:
            self.bwd_depth -= 1
            if self.bwd_depth == 0:
                if self.phase is not None and self.phase[0] == "backward":
                    self.close_phase()
                if self.in_step:  # a closure's: the step goes on
                    self.open_phase("optimizer", self.step_phase)
                if self.light:
                    self.await_root()  # the next micro-batch's forward

    def step_begin(self, closure=False):
        """An optimizer's step begins.  Given a closure (LBFGS, PyTorch
        Lightning's training loop), the step runs the forward and backward
        itself: its phase opens when the closure's backward ends."""
        if _IS_COMPILING():
            return
        with self.lock:
            self.stepped = True
            self.begin_iteration()
            self.in_step += 1
            self.step_phase = self.opt_steps
            self.opt_steps += 1
            if not closure:
                self.open_phase("optimizer", self.step_phase)


def _caller_frame():
    """The frame of the code that called the module being run: the first
    one outside nn.Module's dispatch and this file."""
    f = sys._getframe(2)
    while f is not None and (f.f_code.co_filename == __file__
                             or f.f_code.co_filename.endswith(_MODULE_PY)):
        f = f.f_back
    return f


_MODULE_PY = os.path.join("torch", "nn", "modules", "module.py")


def _has_parameters(module):
    try:
        return next(module.parameters(), None) is not None
    except Exception:
        return False


def _model_name(frame, module, module_type):
    """module's variable name where the calling code holds other models
    (see name_top), else "": the caller's locals, its self's attributes,
    then its globals."""
    spaces = [frame.f_locals]
    s = spaces[0].get("self")
    if s is not None and not isinstance(s, module_type):
        try:
            spaces.append(vars(s))
        except TypeError:
            pass
    if frame.f_globals is not frame.f_locals:
        spaces.append(frame.f_globals)
    own, others = None, False
    mine = None
    for space in spaces:
        for k, v in list(space.items()):
            if v is module:
                if own is None and not k.startswith("_") and k != "self":
                    own = k
                continue
            if others or not isinstance(v, module_type) or not _has_parameters(v):
                continue
            if mine is None:
                mine = set(id(m) for m in module.modules())
            if id(v) in mine or any(m is module for m in v.modules()):
                continue  # inside the model, or the model inside it (a wrapper)
            others = True
    return own if others and own is not None else ""


STEPLESS_AFTER = 32  # backwards without a step before forwards end iterations
LEARN_STEPS = 32     # steps in the first iteration while an optimizer made has not stepped
INFER_AFTER = 32     # inference forwards before each begins an iteration
STATE = _State()
_installed = False


def _backward_fn():
    """The collector's stprof_py_backward_v1 (called with the GIL: PyDLL),
    or None: where a backward pass began, for the tensors autograd's own
    threads make (collector/core/pybackward.c)."""
    try:
        import ctypes
        f = ctypes.PyDLL(None).stprof_py_backward_v1
        f.argtypes = [ctypes.c_int]
        f.restype = None
        return f
    except (AttributeError, OSError):
        return None


_BACKWARD = _backward_fn()


def _site_fns():
    """The collector's stprof_py_module_site_v1 and
    stprof_py_backward_site_v1 (called with the GIL: PyDLL), or None."""
    try:
        import ctypes
        lib = ctypes.PyDLL(None)
        make, use = lib.stprof_py_module_site_v1, lib.stprof_py_backward_site_v1
        make.argtypes, make.restype = [ctypes.c_char_p], ctypes.c_uint32
        use.argtypes, use.restype = [ctypes.c_uint32], None
        return make, use
    except (AttributeError, OSError):
        return None, None


_MODULE_SITE, _USE_SITE = _site_fns()


def _lean_fn():
    """The collector's stprof_lean_v1, or None (an older collector)."""
    try:
        import ctypes
        f = ctypes.CDLL(None).stprof_lean_v1
        f.argtypes = []
        f.restype = ctypes.c_int
        return f
    except (AttributeError, OSError):
        return None


_LEAN = _lean_fn()


def _compiled():
    """Whether torch.compile has compiled a frame in this process: its
    guards watch the global module hooks (each change would recompile), so
    lean iterations keep them.  (torch._dynamo itself is loaded by plain
    eager programs too: PyTorch 2.x's optimizers import it.)"""
    u = sys.modules.get("torch._dynamo.utils")
    if u is None:
        return False
    try:
        return bool(u.counters.get("frames", {}).get("total", 0))
    except Exception:
        return True


def _compiling_fn(torch):
    """torch.compiler.is_compiling (PyTorch 2.1 on; torch._dynamo's in
    2.0), or _not_compiling (1.x).  TorchDynamo traces the global module
    and optimizer hooks into the graphs it compiles (torch.compile(model), a
    compiled optimizer step); traced, the shim's hooks (their lock, their
    markers through the collector's builtin) would break the graph there,
    and the program would run other graphs than without stprof.  Dynamo
    reads is_compiling() as True while tracing, so each hook asks it first
    and is traced as returning at once: the compiled code runs no hook of
    ours (its modules get no module markers; the compiled module's own
    wrapper, run eagerly, still opens the forward phase)."""
    for owner in ("compiler", "_dynamo"):
        f = getattr(getattr(torch, owner, None), "is_compiling", None)
        if callable(f):
            return f
    return _not_compiling


def _not_compiling():
    return False


_IS_COMPILING = _not_compiling


def _skip_code_fn():
    """The collector's stprof_py_skip_code_v1 (collector/core/pyskip.c:
    call paths leave out the frames of a code object named to it), or None
    outside a recording."""
    try:
        import ctypes
        f = ctypes.PyDLL(None).stprof_py_skip_code_v1
        f.argtypes, f.restype = [ctypes.py_object], ctypes.c_int
    except (AttributeError, OSError):
        return None
    return f


def _skip_dispatch_frames(module_class):
    """Names PyTorch's module dispatch code to the collector, whose call
    paths then leave its frames out (collector/core/pyskip.c): they differ
    with and without module hooks, which lean iterations take away."""
    import types
    f = _skip_code_fn()
    if f is None:
        return False
    done = []
    for name in ("_wrapped_call_impl", "_call_impl"):
        fn = getattr(module_class, name, None)
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        done.append(f(code))
        for c in code.co_consts:  # `inner`, where 2.x runs forward with hooks
            if isinstance(c, types.CodeType):
                done.append(f(c))
    return bool(done) and all(done)


_GLOBAL_HOOK_DICTS = ("_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_pre_hooks",
                      "_global_forward_hooks", "_global_forward_hooks_always_called",
                      "_global_forward_hooks_with_kwargs")


def _hide_own_hooks(mm):
    """torch.compile(module) warns at each call of the compiled module while
    any global module hook exists (the UserWarning "Using
    `torch.compile(module)` when there are global hooks on modules"; 2.x,
    torch/_dynamo/eval_frame.py, through
    torch.nn.modules.module._has_any_global_hook, which nothing else calls).
    The shim's hooks are not the program's: that question leaves them out,
    so the program prints what it prints without stprof (and still gets the
    warning for global hooks of its own)."""
    if not callable(getattr(mm, "_has_any_global_hook", None)) or \
            not all(isinstance(getattr(mm, n, None), dict) for n in _GLOBAL_HOOK_DICTS):
        return  # 1.x has none; another layout: left alone

    def _has_any_global_hook():
        own = set(h.id for h in (STATE.hooks or ()) + (STATE.waiter,) if h is not None)
        return any(k not in own for n in _GLOBAL_HOOK_DICTS for k in getattr(mm, n))
    _has_any_global_hook._stprof = True
    mm._has_any_global_hook = _has_any_global_hook


def _without_module_hooks(fn):
    """fn run with the shim's global module hooks away: strict torch.export
    (2.x) traces a module's __call__ instead of its forward while any global
    forward hook exists (torch/_dynamo/convert_frame.py, get_traced_fn), and
    then refuses its own wrapper ("Attempted to inline function marked as
    skipped: ModuleToTrace.forward"): the export raised under stprof and
    not without.  An export is no training step: its markers are not
    missed."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with STATE.lock:
            had, waited = STATE.hooks is not None, STATE.waiter is not None
            STATE.remove_hooks()
            STATE.drop_waiter()
        try:
            return fn(*args, **kwargs)
        finally:
            with STATE.lock:
                if had:
                    STATE.add_hooks()
                if waited:
                    STATE.await_root()
    wrapper._stprof = True
    return wrapper


def _hooks_away_in_export(torch):
    ex = getattr(torch, "export", None)  # 2.x
    for name in ("export", "draft_export"):
        f = getattr(ex, name, None)
        if callable(f) and not getattr(f, "_stprof", False):
            setattr(ex, name, _without_module_hooks(f))


def _skip_own_frames():
    """The shim's own frames that tensors are made under are left out of
    call paths as PyTorch's dispatch frames are (collector/core/pyskip.c):
    the module site a backward tensor is charged to (post -> tag_backward
    -> stprof_py_module_site_v1), and the wrappers of autograd.backward,
    of an optimizer's step (1.x), of a DataLoader worker's fetch and of
    torch.export.  They are nothing a user reads or changes, yet whole paths
    (report --all-frames) showed "torch_markers.py:330 in _State.post"."""
    f = _skip_code_fn()
    if f is None:
        return
    # _around's code is the wrapper of autograd.backward, a 1.x step and a fetch
    wrappers = (_around(len, int, int), _without_module_hooks(len))
    for fn in (_State.post, _State.tag_backward) + wrappers:
        f(fn.__code__)


def _disable_sites():
    global _MODULE_SITE
    _MODULE_SITE = None


_SITE = threading.local()  # v: the site the thread's last tagged node set


def _site_hook(site):
    def hook(grad_outputs):
        if not _IS_COMPILING():  # compiled autograd
            if STATE.recompute_depth:
                STATE.end_recompute()
            _SITE.v = site
            _USE_SITE(site)
    return hook


def _around(fn, before, after, only_if=None, with_args=False):
    """fn with before() and after() around each call (after() even when
    fn raises); only where only_if() says so, when given; with_args: they
    are given the call's (args, kwargs).  (One wrapper for all: its code is
    left out of call paths, _skip_own_frames.)"""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if only_if is not None and not only_if():
            return fn(*args, **kwargs)
        before(args, kwargs) if with_args else before()
        try:
            return fn(*args, **kwargs)
        finally:
            after(args, kwargs) if with_args else after()
    wrapper._stprof = True
    return wrapper


def _backward_begin():
    STATE.backward_begin()
    if _BACKWARD:
        _BACKWARD(1)


def _backward_end():
    if _BACKWARD:
        _BACKWARD(0)
    STATE.backward_end()


def _wrap_backward(fn):
    return _around(fn, _backward_begin, _backward_end)


def _closure_given(args, kwargs):
    """Whether an optimizer's step was given a closure."""
    c = kwargs.get("closure") if kwargs else None
    return callable(c) or bool(args) and callable(args[0])


def _wrap_step(fn):
    """An optimizer class's step (PyTorch 1.x): args[0] is the optimizer."""
    return _around(fn, lambda a, k: STATE.step_begin(_closure_given(a[1:], k)),
                   lambda a, k: STATE.step_end(a[0] if a else None), with_args=True)


def _wrap_fetch(fn, worker_info):
    """In a DataLoader worker only: the loop itself (num_workers=0) fetches
    with the same fetchers."""
    return _around(fn, STATE.worker_batch, STATE.worker_batch_done, lambda: worker_info() is not None)


def _mark_worker_batches(torch):
    """Each batch a DataLoader worker fetches is an iteration of its trace
    (see the top): the fetchers' fetch, which a worker calls once a batch
    (and the loop itself, with num_workers=0: not marked there)."""
    try:
        import importlib
        fetch = importlib.import_module("torch.utils.data._utils.fetch")
        worker_info = torch.utils.data.get_worker_info
    except (ImportError, AttributeError):
        return
    for name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(fetch, name, None)
        f = getattr(cls, "fetch", None)
        if callable(f) and not getattr(f, "_stprof", False):
            cls.fetch = _wrap_fetch(f, worker_info)


def install(torch):
    """Hooks torch once: module hooks, autograd entry points, optimizers."""
    global _installed, mark, _IS_COMPILING
    if _installed:
        return
    _installed = True
    _IS_COMPILING = _compiling_fn(torch)
    mark = fast_mark() or mark  # the collector's builtin: the hooks' markers cost less
    from . import torch_cuda
    try:  # first: before the program can touch the GPU
        torch_cuda.install(torch)
    except Exception as e:  # never break the program
        sys.stderr.write("stprof: PyTorch CUDA recording disabled: %s\n" % (e,))
    STATE.grad_enabled = torch.is_grad_enabled
    STATE.tensor_type = torch.Tensor
    mm = torch.nn.modules.module
    STATE.mm = mm
    STATE.add_hooks()
    STATE.can_light = _skip_dispatch_frames(mm.Module)
    _skip_own_frames()
    _hide_own_hooks(mm)
    _hooks_away_in_export(torch)

    if os.environ.get("STPROF_ACCESSES") == "1":
        from . import accesses
        accesses.install(torch)

    _mark_worker_batches(torch)
    from . import ranks
    try:  # torch.multiprocessing.spawn's workers learn their rank late
        ranks.install(torch)
    except Exception as e:  # never break the program
        sys.stderr.write("stprof: late ranks disabled: %s\n" % (e,))

    ag = torch.autograd
    for name in ("backward", "grad"):
        f = getattr(ag, name, None)
        if f is not None and not getattr(f, "_stprof", False):
            setattr(ag, name, _wrap_backward(f))

    import importlib
    opt = importlib.import_module("torch.optim.optimizer")
    pre = getattr(opt, "register_optimizer_step_pre_hook", None)
    post = getattr(opt, "register_optimizer_step_post_hook", None)
    hooked = pre is not None and post is not None
    if hooked:  # PyTorch 2.x: every optimizer (args holds the optimizer itself first)
        pre(lambda o, args, kwargs: STATE.step_begin(_closure_given(args[1:], kwargs)))
        post(lambda o, args, kwargs: STATE.step_end(o))
    # each optimizer made is counted (step_end learns the cycle of them);
    # PyTorch 1.x: its class's step wrapped when first constructed
    init = opt.Optimizer.__init__
    if getattr(init, "_stprof", False):
        return

    @functools.wraps(init)
    def init_wrapper(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            STATE.made.add(self)
            if STATE.closing is not None:
                STATE.fresh.add(self)
        except TypeError:
            pass
        cls = type(self)
        if not hooked and not getattr(cls.step, "_stprof", False):
            cls.step = _wrap_step(cls.step)
    init_wrapper._stprof = True
    opt.Optimizer.__init__ = init_wrapper


class TorchImportHook(ImportHook):
    """Installs the markers right after `import torch` has run
    torch/__init__.py (torch.nn and torch.optim included)."""

    def __init__(self):
        super().__init__("torch", install, "PyTorch markers")

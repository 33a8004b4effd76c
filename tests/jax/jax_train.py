"""jax_train.py - a small JAX training program in the shapes JAX users write
them, for the JAX tests (tests/jax/) and the GPU check (tests/gpu): an MLP
trained on random batches, with no reference to stprof unless asked.

  --steps N        training steps (10)
  --shape S        mlp (default): params threaded through a jitted
                   train_step(params, batch) with plain SGD;
                   flax: flax.linen + optax adam in a TrainState, the
                   flax example's apply_model (grads) + update_model (state);
                   accum: gradient accumulation, a jitted grad_step per
                   micro-batch (--micro, 3) and a jitted apply_step
  --eval K         a jitted eval_step every K steps (0: none)
  --donate         donate the state to the step (donate_argnums=0)
  --annotate       jax.profiler.StepTraceAnnotation per step and a
                   TraceAnnotation("update") around its computation
  --thread         batches made in a background thread (a queue)
  --width W        hidden width (256)
  --check          after each step, annotate the bytes of JAX's live
                   arrays (stprof.annotate("jax_bytes", ...)): the
                   trace's JAX space must hold exactly that (nothing
                   without stprof)
  --fake-stats     after each step, annotate XLA-style statistics for the
                   host (xla.bytes_in_use:cpu = the live bytes rounded
                   up to 256 B each, as BFC would; pool and limit 64 MiB):
                   the allocator report's plumbing without a GPU
  --live           after each step, print the count and bytes of JAX's live
                   arrays, and at the end XLA's num_allocs and
                   peak_bytes_in_use where the device has memory_stats()
                   (a GPU): the same with and without stprof when the shim
                   leaves the program's allocations alone
  --time           print the training loop's wall time (stderr)
  --profile FILE   at the end, jax.profiler.save_device_memory_profile(FILE),
                   and print the live buffers' count and bytes
Prints the loss of the last step (the same with and without stprof).
"""
import argparse
import contextlib
import functools
import queue
import sys
import threading
import time

import jax
import jax.numpy as jnp

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--shape", default="mlp", choices=["mlp", "flax", "accum"])
p.add_argument("--micro", type=int, default=3)
p.add_argument("--eval", type=int, default=0)
p.add_argument("--donate", action="store_true")
p.add_argument("--annotate", action="store_true")
p.add_argument("--thread", action="store_true")
p.add_argument("--width", type=int, default=256)
p.add_argument("--check", action="store_true")
p.add_argument("--fake-stats", action="store_true")
p.add_argument("--live", action="store_true")
p.add_argument("--time", action="store_true")
p.add_argument("--profile")
a = p.parse_args()

BATCH, IN, OUT = 64, 128, 10


def live_arrays():
    return [x for x in jax.live_arrays() if not x.is_deleted()]


def live_bytes():
    return sum(x.on_device_size_in_bytes() for x in live_arrays())


def report_points(step):
    if a.live:
        arrs = live_arrays()
        print("step %d: live %d arrays, %d bytes" % (step, len(arrs), sum(x.on_device_size_in_bytes() for x in arrs)))
    if not (a.check or a.fake_stats):
        return
    try:
        import stprof  # importable under stprof only
    except ImportError:
        return
    if a.check:
        stprof.annotate("jax_bytes", live_bytes())
    if a.fake_stats:
        in_use = sum((x.on_device_size_in_bytes() + 255) // 256 * 256 for x in live_arrays())
        stprof.annotate("xla.bytes_in_use:cpu", in_use)
        stprof.annotate("xla.pool_bytes:cpu", 64 << 20)
        stprof.annotate("xla.bytes_limit:cpu", 64 << 20)


def init(key, sizes):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, k = jax.random.split(key)
        params.append({"w": jax.random.normal(k, (n_in, n_out)) / jnp.sqrt(n_in), "b": jnp.zeros(n_out)})
    return params


def predict(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


def batch(i):
    k = jax.random.PRNGKey(1000 + i)
    x = jax.random.normal(k, (BATCH, IN))
    return x, jnp.sin(x[:, :OUT])


def batches(n):
    if not a.thread:
        for i in range(n):
            yield batch(i)
        return
    q = queue.Queue(maxsize=2)

    def producer():
        for i in range(n):
            q.put(batch(i))
    t = threading.Thread(target=producer, daemon=True)
    t.start()
    for _ in range(n):
        yield q.get()
    t.join()


donate = dict(donate_argnums=0) if a.donate else {}


@functools.partial(jax.jit, **donate)
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), loss


@jax.jit
def eval_step(params, x, y):
    return loss_fn(params, x, y)


@jax.jit
def grad_step(params, x, y):
    return jax.value_and_grad(loss_fn)(params, x, y)


@functools.partial(jax.jit, **donate)
def apply_step(params, grads):
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g / a.micro, params, grads)


sizes = [IN, a.width, a.width, OUT]
loss = None
t_loop = time.perf_counter()
if a.shape == "flax":
    import optax
    from flax import linen as nn
    from flax.training import train_state

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(a.width)(x))
            x = nn.relu(nn.Dense(a.width)(x))
            return nn.Dense(OUT)(x)

    @jax.jit
    def apply_model(state, x, y):
        def lf(params):
            return jnp.mean((state.apply_fn({"params": params}, x) - y) ** 2)
        return jax.value_and_grad(lf)(state.params)

    @functools.partial(jax.jit, **donate)
    def update_model(state, grads):
        return state.apply_gradients(grads=grads)

    m = MLP()
    state = train_state.TrainState.create(apply_fn=m.apply, params=m.init(jax.random.PRNGKey(0), jnp.ones((1, IN)))["params"],
                                          tx=optax.adam(1e-3))
    for i, (x, y) in enumerate(batches(a.steps)):
        loss, grads = apply_model(state, x, y)
        state = update_model(state, grads)
        report_points(i)
else:
    params = init(jax.random.PRNGKey(0), sizes)
    for i, (x, y) in enumerate(batches(a.steps)):
        ctx = contextlib.ExitStack()
        if a.annotate:
            ctx.enter_context(jax.profiler.StepTraceAnnotation("train", step_num=i))
            ctx.enter_context(jax.profiler.TraceAnnotation("update"))
        if a.shape == "accum":
            acc = None
            for m in range(a.micro):
                xm, ym = x[m::a.micro], y[m::a.micro]
                loss, g = grad_step(params, xm, ym)
                acc = g if acc is None else jax.tree_util.tree_map(jnp.add, acc, g)
            params = apply_step(params, acc)
        else:
            params, loss = train_step(params, x, y)
        ctx.close()
        if a.eval and (i + 1) % a.eval == 0:
            eval_step(params, x, y)
        report_points(i)
print("loss %.6f" % float(loss))
if a.live:
    st = jax.devices()[0].memory_stats()
    if st:
        print("xla num_allocs %d peak_bytes_in_use %d" % (st.get("num_allocs", -1), st.get("peak_bytes_in_use", -1)))
if a.time:
    sys.stderr.write("loop %.6f\n" % (time.perf_counter() - t_loop))
if a.profile:
    # the buffers, as the profile counts them: two arrays may share one
    # (converting a scalar with float() makes such a pair)
    bufs = {}
    for x in live_arrays():
        for s in x.addressable_shards:
            bufs[(s.device.id, s.data.unsafe_buffer_pointer())] = s.data.on_device_size_in_bytes()
    print("live %d %d" % (len(bufs), sum(bufs.values())))
    jax.profiler.save_device_memory_profile(a.profile)

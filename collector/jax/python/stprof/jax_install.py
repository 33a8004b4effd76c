"""stprof.jax_install - puts the JAX parts of the shim in place the moment
the program has imported jax (or at once when it already has):
stprof.jax_xla's compiler hook and settings annotations, the buffer
recorder (stprof.jax_buffers, when libstprof.so has the JAX backend's entry
points), and stprof.jax_steps' jit wrapper with both as observers; the
buffer recorder runs first after a dispatch, so XLA's statistics are
sampled once the buffers they count are recorded.  Never imports jax
itself.
"""
import sys

from .importhook import ImportHook


def install(jax):
    from . import jax_buffers, jax_steps, jax_xla
    if getattr(jax.jit, "_stprof", False):
        return
    xla = jax_xla.XLA
    try:
        from jax._src import compiler
        xla.wrap_compiler(compiler)
    except Exception as e:
        sys.stderr.write("stprof: JAX programs' temporary bytes and HLO values not recorded (%s)\n" % (e,))
    xla.annotate_settings()
    observers = []
    if jax_buffers.BUFFERS.start(jax, xla):
        observers.append(jax_buffers.BUFFERS)
    observers.append(jax_xla.Sampler(xla, jax))
    jax_steps.install(jax, observers)


class JaxImportHook(ImportHook):
    """Installs the JAX parts right after `import jax` has run
    jax/__init__.py."""

    def __init__(self):
        super().__init__("jax", install, "JAX hooks")


def arm():
    """Installs now if jax is imported, else when it is."""
    mod = sys.modules.get("jax")
    if mod is not None and hasattr(mod, "jit"):
        install(mod)
    else:
        sys.meta_path.insert(0, JaxImportHook())

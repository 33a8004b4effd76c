"""stprof.importhook - a meta path finder that runs an install function on a
module right after `import NAME` has executed it (its __init__ and what
that imports), before the program's next line; used for torch and jax.
The finder removes itself at the first import of NAME; an error in the
install is reported once on stderr and never reaches the program."""
import sys


class ImportHook:
    def __init__(self, name, install, what):
        self.name = name
        self.install = install
        self.what = what

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        import importlib.util
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real = spec.loader.exec_module
        install, what = self.install, self.what

        def exec_module(module):
            real(module)
            try:
                install(module)
            except Exception as e:  # never break the program
                sys.stderr.write("stprof: %s disabled: %s\n" % (what, e))
        spec.loader.exec_module = exec_module
        return spec

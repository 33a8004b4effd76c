"""stprof's Python shim: loaded at start-up by every Python program that
stprof runs (the stprof command puts this directory first on PYTHONPATH).

It owns nothing but start-up: it loads the user's own sitecustomize (the one
this file shadows, if any), then, when the program really runs under the
collector, arranges for stprof.torch_markers to be installed the moment the
program imports torch (it never imports torch itself).  Without the collector
(STPROF_OUTPUT unset), or with STPROF_SHIM=0, it does nothing else.  Errors in the shim never reach
the program: they are reported on stderr once and the shim stands down.
"""
import os
import sys


def _chain_user_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    import importlib.machinery
    import importlib.util
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


def _start():
    # under the collector, or under libstalloc enforcing a plan or a rank's
    # plan (`stprof run --plan`: its iterations start at the markers, as when
    # recorded)
    planned = os.environ.get("STALLOC_PLAN") or os.environ.get("STALLOC_RANK_PLANS")
    if not (os.environ.get("STPROF_OUTPUT") or planned) or os.environ.get("STPROF_SHIM") == "0":
        return
    import stprof
    stprof._arm()


try:
    _chain_user_sitecustomize()
finally:
    try:
        _start()
    except Exception as e:  # never break the program
        sys.stderr.write("stprof: python shim disabled: %s\n" % (e,))

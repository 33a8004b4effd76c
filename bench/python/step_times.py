#!/usr/bin/env python3
"""step_times.py SCRIPT [ARGS...] - runs a PyTorch training script as
__main__, unchanged, and times its optimizer steps from inside: every
optimizer class's step is wrapped (before the script runs) to note the wall
clock and the CPU time of the thread that calls it.  At exit one line on
stderr:

  step_times import=S steps=N first2=S loop=S loop_cpu=S proc_cpu=S wall=S
             loop_from=T loop_to=T tid=N

import: `import torch`; first2: start of the script to the end of step 2;
loop: the wall time of the steps after the first two (end of step 2 to
the end of the last step); loop_cpu: the calling thread's CPU time over
the same steps; proc_cpu: the whole process's CPU time (every thread:
the collector's too); wall: start to exit; loop_from and loop_to: the
loop's ends on CLOCK_MONOTONIC and tid the thread that steps, for
loop_work.py to find the loop's samples in a perf recording.
bench/python/loop.sh runs it under each variant."""
import atexit
import functools
import resource
import runpy
import sys
import threading
import time

t0 = time.monotonic()
import torch  # noqa: E402

t_import = time.monotonic() - t0
marks = []  # (wall, thread cpu) at the end of each step
tid = [0]   # the thread that steps


def thread_cpu():
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_utime + r.ru_stime


def wrap(cls):
    step = cls.__dict__.get("step")
    if step is None or getattr(step, "_step_times", False):
        return
    @functools.wraps(step)
    def timed(self, *a, **k):
        out = step(self, *a, **k)
        marks.append((time.monotonic(), thread_cpu()))
        tid[0] = threading.get_native_id()
        return out
    timed._step_times = True
    cls.step = timed


def subclasses(c):
    for s in c.__subclasses__():
        yield s
        yield from subclasses(s)


for c in list(subclasses(torch.optim.Optimizer)):
    wrap(c)


def report():
    r = resource.getrusage(resource.RUSAGE_SELF)
    n = len(marks)
    first2 = marks[1][0] - t0 if n >= 2 else float("nan")
    loop = marks[-1][0] - marks[1][0] if n > 2 else float("nan")
    loop_cpu = marks[-1][1] - marks[1][1] if n > 2 else float("nan")
    ends = (marks[1][0], marks[-1][0]) if n > 2 else (float("nan"), float("nan"))
    sys.stderr.write("step_times import=%.4f steps=%d first2=%.4f loop=%.4f loop_cpu=%.4f proc_cpu=%.4f wall=%.4f"
                     " loop_from=%.6f loop_to=%.6f tid=%d\n"
                     % (t_import, n, first2, loop, loop_cpu, r.ru_utime + r.ru_stime, time.monotonic() - t0,
                        ends[0], ends[1], tid[0]))


atexit.register(report)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")

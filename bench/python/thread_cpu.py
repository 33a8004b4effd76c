#!/usr/bin/env python3
"""thread_cpu.py - runs a Python script (argv[1:]) as __main__ and, at exit,
prints to stderr the wall time of the script and the CPU time of the thread
that ran it: "script wall W thread cpu C".  On a shared machine the thread's
CPU time moves less with the load than the wall time does, and it leaves
out what the collector's own thread does in parallel (bench/python/run.sh)."""
import atexit
import resource
import runpy
import sys
import time

t0 = time.monotonic()


def report():
    r = resource.getrusage(resource.RUSAGE_THREAD)
    sys.stderr.write("script wall %.3f thread cpu %.3f\n" % (time.monotonic() - t0, r.ru_utime + r.ru_stime))


atexit.register(report)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")

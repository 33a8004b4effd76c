#!/usr/bin/env python3
"""trace_alloc_stats.py - what a stprof trace says the training example
allocated, in the form of `train --stats`.

Usage: trace_alloc_stats.py STPROF TRACE EXECUTABLE FUNCTION

Reads `STPROF dump -s TRACE`; counts the allocations whose call path's
innermost frame (the caller of malloc) lies in FUNCTION of EXECUTABLE (found
with nm), and the frees of those blocks (by address), and prints
  train-stats: allocs=N frees=N bytes=N peak_live=N leaked=N leaked_bytes=N
"""
import os
import re
import subprocess
import sys


def function_range(exe, function):
    out = subprocess.run(["nm", "-S", "--defined-only", exe], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tT" and f[3] == function:
            start = int(f[0], 16)
            return start, start + int(f[1], 16)
    sys.exit("%s: no function %s" % (exe, function))


def main():
    stprof, trace, exe, function = sys.argv[1:5]
    lo, hi = function_range(exe, function)
    exe = os.path.realpath(exe)
    dump = subprocess.run([stprof, "dump", "-s", "-t", "module", "-t", "alloc", "-t", "free", trace],
                          check=True, capture_output=True, text=True).stdout
    bias = None
    live = {}
    allocs = frees = total = current = peak = 0
    for line in dump.splitlines():
        if " module " in line:
            m = re.search(r' bias=(0x[0-9a-f]+) .*path="([^"]*)"', line)
            if m and os.path.realpath(m.group(2)) == exe:
                bias = int(m.group(1), 16)
            continue
        m = re.search(r" alloc addr=(0x[0-9a-f]+) size=(\d+).* stack=(0x[0-9a-f]+)", line)
        if m and bias is not None and lo <= int(m.group(3), 16) - bias < hi:
            size = int(m.group(2))
            allocs, total, current = allocs + 1, total + size, current + size
            peak = max(peak, current)
            live[m.group(1)] = size
            continue
        m = re.search(r" free addr=(0x[0-9a-f]+)", line)
        if m and m.group(1) in live:
            frees += 1
            current -= live.pop(m.group(1))
    if bias is None:
        sys.exit("%s: %s is not among the trace's modules" % (trace, exe))
    print("train-stats: allocs=%d frees=%d bytes=%d peak_live=%d leaked=%d leaked_bytes=%d"
          % (allocs, frees, total, peak, allocs - frees, current))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""thread_cpu_series.py - interleaved rounds of LABEL=COMMAND variants whose
commands run bench/python/thread_cpu.py; prints each variant's median
script wall time and median CPU time of the script's thread, with their
ratios to the first variant.

  thread_cpu_series.py [-n RUNS] [--cwd DIR] LABEL=COMMAND ..."""
import argparse
import re
import shlex
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--cwd", default=None)
    ap.add_argument("variants", nargs="+")
    a = ap.parse_args()
    vs = [v.split("=", 1) for v in a.variants]
    wall = {k: [] for k, _ in vs}
    cpu = {k: [] for k, _ in vs}
    for r in range(1 + a.n):
        for k, cmd in vs:
            p = subprocess.run(shlex.split(cmd.replace("{i}", str(r))), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, cwd=a.cwd)
            m = re.search(r"script wall ([0-9.]+) thread cpu ([0-9.]+)", p.stderr)
            if p.returncode != 0 or not m:
                sys.exit(f"{k}: exit status {p.returncode}: {cmd}")
            if r:
                wall[k].append(float(m.group(1)))
                cpu[k].append(float(m.group(2)))
    bw, bc = statistics.median(wall[vs[0][0]]), statistics.median(cpu[vs[0][0]])
    print(f"  {'variant':<14} {'script s':>9} {'ratio':>6} {'thread cpu s':>13} {'ratio':>6}   ({a.n} runs each)")
    for k, _ in vs:
        w, c = statistics.median(wall[k]), statistics.median(cpu[k])
        print(f"  {k:<14} {w:9.3f} {w / bw:5.2f}x {c:13.3f} {c / bc:5.2f}x")


if __name__ == "__main__":
    main()

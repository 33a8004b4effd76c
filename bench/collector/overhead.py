#!/usr/bin/env python3
"""overhead.py - times whole commands: each variant in turn, round after
round (so drift in the machine's speed hits all alike), prints the median,
min and max wall time of each and its median ratio to the first variant.

  overhead.py [-n RUNS] [--cwd DIR] LABEL=COMMAND [LABEL=COMMAND ...]

COMMAND is split like a shell would (shlex); its output is discarded.
A command whose line contains {i} gets the run's number there (for
distinct output files)."""
import argparse, os, shlex, statistics, subprocess, sys, time

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--cwd", default=None)
    ap.add_argument("variants", nargs="+")
    a = ap.parse_args()
    vs = [v.split("=", 1) for v in a.variants]
    times = {label: [] for label, _ in vs}
    for r in range(a.warmup + a.n):
        for label, cmd in vs:
            argv = shlex.split(cmd.replace("{i}", str(r)))
            t0 = time.perf_counter()
            p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=a.cwd)
            dt = time.perf_counter() - t0
            if p.returncode != 0:
                sys.exit(f"{label}: exit status {p.returncode}: {cmd}")
            if r >= a.warmup:
                times[label].append(dt)
    base = statistics.median(times[vs[0][0]])
    print(f"  {'variant':<12} {'median s':>9} {'min s':>8} {'max s':>8} {'ratio':>7}   ({a.n} runs each)")
    for label, _ in vs:
        t = times[label]
        print(f"  {label:<12} {statistics.median(t):9.3f} {min(t):8.3f} {max(t):8.3f} {statistics.median(t) / base:7.2f}x")

if __name__ == "__main__":
    main()

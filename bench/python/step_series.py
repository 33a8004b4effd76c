#!/usr/bin/env python3
"""step_series.py - runs LABEL=COMMAND variants round after round (each in
turn, so drift in the machine's speed hits all alike), each COMMAND a run
of bench/python/step_times.py, and prints per variant the medians of its
step_times figures and their ratios to the first variant's:

  loop      wall time of the steps after the first two
  loop_cpu  the training thread's CPU time over those steps
  proc_cpu  the whole process's CPU time (the collector's thread too)
  wall      the whole run, `import torch` included (from inside)
  run       the whole command, timed from outside (the interpreter's start
            and the profiler's own start and finish included)

  step_series.py [-n RUNS] [--warmup W] [--cwd DIR] LABEL=COMMAND ...

A command whose line contains {i} gets the run's number there."""
import argparse, re, shlex, statistics, subprocess, sys, time

KEYS = ("loop", "loop_cpu", "proc_cpu", "wall", "run")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--cwd", default=None)
    ap.add_argument("variants", nargs="+")
    a = ap.parse_args()
    vs = [v.split("=", 1) for v in a.variants]
    got = {label: {k: [] for k in KEYS} for label, _ in vs}
    for r in range(a.warmup + a.n):
        for label, cmd in vs:
            argv = shlex.split(cmd.replace("{i}", str(r)))
            t0 = time.monotonic()
            p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=a.cwd, text=True)
            took = time.monotonic() - t0
            m = re.search(r"^step_times (.*)$", p.stderr, re.M)
            if p.returncode != 0 or not m:
                sys.exit(f"{label}: exit status {p.returncode}: {cmd}\n{p.stderr[-2000:]}")
            f = dict(kv.split("=") for kv in m.group(1).split())
            f["run"] = took
            if r >= a.warmup:
                for k in KEYS:
                    got[label][k].append(float(f[k]))
    base = {k: statistics.median(got[vs[0][0]][k]) for k in KEYS}
    print("  %-14s" % "variant" + "".join("%10s %6s" % (k, "ratio") for k in KEYS) + "   (medians of %d runs, s)" % a.n)
    for label, _ in vs:
        row = "  %-14s" % label
        for k in KEYS:
            m = statistics.median(got[label][k])
            row += "%10.3f %5.2fx" % (m, m / base[k] if base[k] else float("nan"))
        print(row)


if __name__ == "__main__":
    main()

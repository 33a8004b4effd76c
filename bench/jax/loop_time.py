#!/usr/bin/env python3
"""loop_time.py - the training loop of tests/jax/jax_train.py --time, timed
from inside (its "loop SECONDS" line on stderr), for each variant in turn,
round after round; prints the median loop time of each, its ratio to the
first, and the difference per step (the recording's cost per dispatch).

  loop_time.py [-n RUNS] --steps N LABEL=COMMAND [LABEL=COMMAND ...]"""
import argparse, shlex, statistics, subprocess, sys, tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("variants", nargs="+")
    a = ap.parse_args()
    vs = [v.split("=", 1) for v in a.variants]
    times = {label: [] for label, _ in vs}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.n + 1):
            for label, cmd in vs:
                p = subprocess.run(shlex.split(cmd.replace("{i}", str(r))), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, cwd=d)
                if p.returncode != 0:
                    sys.exit(f"{label}: exit status {p.returncode}: {cmd}")
                loop = [float(l.split()[1]) for l in p.stderr.splitlines() if l.startswith("loop ")]
                if r and loop:
                    times[label].append(loop[-1])
    base = statistics.median(times[vs[0][0]])
    print(f"  training loop ({a.steps} steps, from inside; {a.n} runs each)")
    for label, _ in vs:
        t = statistics.median(times[label])
        print(f"  {label:<12} {t:9.3f} s {t / base:6.2f}x  {(t - base) / a.steps * 1e6:8.1f} us/step more")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""loop_work.py - the training loop's overhead as work, not wall time: on a
machine whose speed drifts (a shared VM: the same BLAS work took 3,776 and
6,218 samples in two native runs of small_gpt.py an hour apart), a ratio
of wall times measures the drift.  So each variant's run is sampled by
`perf record` (cpu-clock, CLOCK_MONOTONIC timestamps) and the loop's cost
is counted in units of work the profiler does not change:

  work = samples of the stepping thread within the loop
         / samples of the BLAS library within it (the matrix products)

and each variant's median work is printed as a ratio to the first
variant's.  The loop: the steps after the first two, as step_times.py
reports them (loop_from, loop_to, tid), so `import torch`, the model's
construction and the profiler's start and finish are left out; the
collector's own thread (it runs beside the loop, on another core when
there is one) is counted apart, as a share of the loop's samples.

What it cannot see: a slowdown of the BLAS work itself (the profiler's
data pushing the matrices out of the caches) counts as no overhead.  It
needs a PyTorch whose BLAS is a library of its own (Debian's python3-torch
links libblas; a pip wheel's MKL is inside libtorch_cpu) and perf allowed
to sample (perf_event_paranoid at most 2); otherwise it says so and
exits 0.

  loop_work.py [-n RUNS] [--cwd DIR] [--blas REGEX] LABEL=COMMAND ...

Each COMMAND is a run of bench/python/step_times.py (bench/python/loop.sh
gives the same commands to step_series.py); {i} becomes the run's number.
Variants run in turn, round after round."""
import argparse, os, re, shlex, statistics, subprocess, sys, tempfile


def samples(data, blas):
    """(time, tid, comm, in_blas) of each sample in perf file data."""
    p = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,time,ip,dso"],
                       capture_output=True, text=True)
    out = []
    for line in p.stdout.splitlines():
        m = re.match(r"\s*(.*?)\s+(\d+)\s+([0-9.]+):\s+\S+\s+\((.*)\)\s*$", line)
        if m:
            out.append((float(m.group(3)), int(m.group(2)), m.group(1), bool(blas.search(m.group(4)))))
    return out


def one(cmd, cwd, blas, tmp):
    data = os.path.join(tmp, "perf.data")
    p = subprocess.run(["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-F", "999", "-o", data, "--"]
                       + shlex.split(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd, text=True)
    m = re.search(r"^step_times (.*)$", p.stderr, re.M)
    if p.returncode != 0 or not m:
        sys.exit(f"exit status {p.returncode}: {cmd}\n{p.stderr[-2000:]}")
    f = dict(kv.split("=") for kv in m.group(1).split())
    t0, t1, tid = float(f["loop_from"]), float(f["loop_to"]), int(f["tid"])
    thread = inblas = collector = 0
    for t, who, comm, b in samples(data, blas):
        if not t0 <= t <= t1:
            continue
        if who == tid:
            thread += 1
            inblas += b
        elif comm.startswith("stprof"):
            collector += 1
    if inblas < 100:
        sys.exit(f"{cmd}: {inblas} samples in a library matching {blas.pattern!r} within the loop:"
                 " its BLAS is not a library of its own (--blas names it)")
    return thread / inblas, collector / max(thread, 1), float(f["loop"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--cwd", default=None)
    ap.add_argument("--blas", default=r"lib(open)?blas[^/]*\.so")
    ap.add_argument("variants", nargs="+")
    a = ap.parse_args()
    try:
        para = int(open("/proc/sys/kernel/perf_event_paranoid").read())
    except OSError:
        para = 3
    if para > 2 or subprocess.run(["perf", "--version"], capture_output=True).returncode:
        print("  loop work: skipped (perf missing or perf_event_paranoid > 2)")
        return
    blas = re.compile(a.blas)
    vs = [v.split("=", 1) for v in a.variants]
    got = {label: [] for label, _ in vs}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.n):
            for label, cmd in vs:
                got[label].append(one(cmd.replace("{i}", str(r)), a.cwd, blas, tmp))
    base = statistics.median(w for w, _, _ in got[vs[0][0]])
    print("  %-14s %8s %6s  %-22s %9s %8s   (medians of %d runs; work: the stepping thread's samples"
          " per BLAS sample within the loop)" % ("variant", "work", "ratio", "ratios (each run)", "collector", "loop s", a.n))
    for label, _ in vs:
        w = [x for x, _, _ in got[label]]
        print("  %-14s %8.3f %5.3fx  %-22s %8.1f%% %8.3f" % (
            label, statistics.median(w), statistics.median(w) / base,
            " ".join("%.3f" % (x / base) for x in w),
            100 * statistics.median(c for _, c, _ in got[label]),
            statistics.median(s for _, _, s in got[label])))


if __name__ == "__main__":
    main()

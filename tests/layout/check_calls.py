#!/usr/bin/env python3
"""check_calls.py - calls between the files of a library run one way.

For each library directory named below, reads the symbols its object files
define and need (nm) from the build tree, makes the graph "file A calls a
function defined in file B", and fails when the graph has a cycle (a file
that is called back by what it calls).  A cycle is printed with its files.

Usage: check_calls.py BUILD_DIR
The collector (libstprof.so) is not checked yet: its lifecycle, flusher,
signal and output files still call each other (noted on issue 9).
"""
import collections
import glob
import os
import subprocess
import sys

# (directory, CMake target) pairs: every static library, and the CLI
LIBS = [("trace", "stp_trace"), ("symbolize", "stp_symbolize"), ("allocsim", "stp_allocsim"),
        ("detector", "stp_detector"), ("planner", "stp_planner"),
        ("exporter/report", "stp_report"), ("exporter/perfetto", "stp_perfetto"),
        ("snapshot", "stp_snapshot"), ("allocator", "stp_allocator"), ("cli", "stprof")]


def graph(objs):
    defs, uses = {}, collections.defaultdict(set)
    for o in objs:
        name = os.path.basename(o)
        out = subprocess.run(["nm", "--defined-only", "-g", o], capture_output=True, text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3:
                defs[p[2]] = name
        out = subprocess.run(["nm", "-u", o], capture_output=True, text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if p:
                uses[name].add(p[-1])
    g = collections.defaultdict(set)
    for o, syms in uses.items():
        for s in syms:
            if s in defs and defs[s] != o:
                g[o].add(defs[s])
    return g


def cycles(g):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(100000)
    for v in sorted(list(g)):
        if v not in index:
            visit(v)
    return out


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("STPROF_BUILD", "build")
    src = os.environ.get("STPROF_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bad = 0
    checked = 0
    for d, target in LIBS:
        # objects of sources that are still in the tree (a build tree keeps
        # the objects of moved files)
        objs = sorted(o for o in glob.glob(os.path.join(build, d, "CMakeFiles", target + ".dir", "*.o"))
                      if os.path.exists(os.path.join(src, d, os.path.basename(o)[:-2])))
        if not objs:
            print(f"{d}/: no object files under {build} (not built?)")
            bad += 1
            continue
        checked += 1
        for c in cycles(graph(objs)):
            print(f"{d}/: files that call each other: {' -> '.join(x[:-4] for x in c)}")
            bad += 1
    print(f"calls: {checked} libraries checked, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

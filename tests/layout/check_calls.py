#!/usr/bin/env python3
"""check_calls.py - calls between the files of a library run one way.

For each library folder named below, reads the symbols its object files
define and need (nm) from the build tree, makes the graph "file A calls a
function (or uses a variable) defined in file B", and fails when the graph
has a cycle (a file that is called back by what it calls).  A cycle is
printed with its files.

Every code folder of the tree (check_layout.py's folders) must be named
below, so a new library is checked from its first file.

The collector (libstprof.so) is one library in rooms: its core and its
backends are checked each on its own, and between them calls run from a
backend to the core only: the core never calls a backend, and no backend
calls another (they meet through the core's face, collector/core/face.h,
and the hooks they register).

Usage: check_calls.py BUILD_DIR
"""
import collections
import functools
import glob
import os
import subprocess
import sys

import check_layout

# (folder, CMake target, built everywhere): every library, the collector's
# rooms, and the CLI.  The CUPTI backend is built only where CUDA's headers
# were found.
LIBS = [("trace", "stp_trace", True), ("symbolize", "stp_symbolize", True), ("allocsim", "stp_allocsim", True),
        ("detector", "stp_detector", True), ("planner", "stp_planner", True),
        ("exporter/report", "stp_report", True), ("exporter/perfetto", "stp_perfetto", True),
        ("snapshot", "stp_snapshot", True), ("allocator", "stp_allocator", True), ("cli", "stprof", True),
        ("collector/core", "stprof_core", True), ("collector/cuda", "stprof_cuda", False),
        ("collector/sanitizer", "stprof_sanitizer", True), ("collector/torch", "stprof_torch", True),
        ("collector/jax", "stprof_jax", True)]
# A library in rooms: (its core, the rooms that may call only it).
ROOMS = [("collector/core", ["collector/cuda", "collector/sanitizer", "collector/torch", "collector/jax"])]


@functools.lru_cache(maxsize=None)
def nm(o):
    """(symbols o defines, symbols it needs)."""
    out = subprocess.run(["nm", "-g", o], capture_output=True, text=True).stdout
    defined, needed = [], []
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3:
            defined.append(p[2])
        elif len(p) == 2 and p[0] in ("U", "w", "v"):
            needed.append(p[1])
    return defined, needed


def symbols(objs):
    """defs: symbol -> object; uses: object -> symbols it needs."""
    defs, uses = {}, collections.defaultdict(set)
    for o in objs:
        defined, needed = nm(o)
        for s in defined:
            defs[s] = o
        uses[o].update(needed)
    return defs, uses


def graph(objs):
    defs, uses = symbols(objs)
    g = collections.defaultdict(set)
    for o, syms in uses.items():
        for s in syms:
            if s in defs and defs[s] != o:
                g[os.path.basename(o)].add(os.path.basename(defs[s]))
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


def objects(build, src, d, target):
    """Objects of the sources still in the tree (a build tree keeps the
    objects of moved files)."""
    return sorted(o for o in glob.glob(os.path.join(build, d, "CMakeFiles", target + ".dir", "*.o"))
                  if os.path.exists(os.path.join(src, d, os.path.basename(o)[:-2])))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("STPROF_BUILD", "build")
    src = os.environ.get("STPROF_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bad = 0
    checked = 0
    named = {d for d, _, _ in LIBS}
    folders = set()
    for path in check_layout.walk():
        if path.endswith(check_layout.CODE_EXT) and check_layout.folder_of(path):
            folders.add(check_layout.folder_of(path))
    for d in sorted(folders - named):
        print(f"{d}/: a code folder that check_calls.py does not name (add it to LIBS)")
        bad += 1
    objs_of = {}
    for d, target, everywhere in LIBS:
        objs = objects(build, src, d, target)
        if not objs:
            if not everywhere and not os.path.isdir(os.path.join(build, d, "CMakeFiles", target + ".dir")):
                print(f"{d}/: not part of this build (skipped)")
                continue
            print(f"{d}/: no object files under {build} (not built?)")
            bad += 1
            continue
        objs_of[d] = objs
        checked += 1
        for c in cycles(graph(objs)):
            print(f"{d}/: files that call each other: {' -> '.join(x[:-4] for x in c)}")
            bad += 1
    for core, rooms in ROOMS:
        room_of = {o: d for d in [core] + rooms for o in objs_of.get(d, [])}
        defs, uses = symbols(list(room_of))
        for o, syms in sorted(uses.items()):
            for s in sorted(syms):
                t = defs.get(s)
                if t is None or room_of[t] == room_of[o] or room_of[t] == core:
                    continue
                print(f"{room_of[o]}/{os.path.basename(o)[:-4]}: calls {s} of {room_of[t]}/ "
                      f"(a backend calls the core only; the core calls backends through their hooks)")
                bad += 1
    print(f"calls: {checked} libraries checked, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

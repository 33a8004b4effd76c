#!/usr/bin/env python3
"""check_markers.py - checks a marker log written by mark_recorder.so.

Usage: check_markers.py LOG --iters N --micro-batches M [--module NAME]...
                        [--modules-in PHASE]...

The log must hold N iterations numbered 0..N-1, each with a forward and a
backward phase per micro-batch (numbered 0..M-1, forward before backward)
and one optimizer phase; phases never nest; module enter/exit pairs nest
properly and lie inside a phase (one of --modules-in when given); every
--module NAME appears.  Prints one line per problem and exits 1 if any.
"""
import argparse
import collections
import sys

ITER_BEGIN, ITER_END, PHASE_BEGIN, PHASE_END, MODULE_ENTER, MODULE_EXIT = 1, 2, 3, 4, 5, 6


def check(lines, iters, micro_batches, modules, modules_in):
    problems = []
    it = None            # current iteration
    phase = None         # (name, value) of the open phase
    stack = []           # open modules
    next_iter = 0
    phases = collections.Counter()  # (iter, name, value) -> count
    seen_modules = set()
    order = []           # (iter, name, value) in order of beginning

    for lineno, line in enumerate(lines, 1):
        kind, name, value = line.split(" ")
        kind, value = int(kind), int(value)
        where = "line %d" % lineno
        if kind == ITER_BEGIN:
            if it is not None:
                problems.append("%s: iteration %d begins inside iteration %d" % (where, value, it))
            if value != next_iter:
                problems.append("%s: iteration %d, expected %d" % (where, value, next_iter))
            it, next_iter = value, value + 1
        elif kind == ITER_END:
            if it != value:
                problems.append("%s: iteration %d ends, but %s is open" % (where, value, it))
            if phase or stack:
                problems.append("%s: iteration ends with phase %s / modules %s open" % (where, phase, stack))
            it = None
        elif kind == PHASE_BEGIN:
            if it is None:
                problems.append("%s: phase %s outside an iteration" % (where, name))
            if phase:
                problems.append("%s: phase %s begins inside %s" % (where, name, phase))
            phase = (name, value)
            phases[(it, name, value)] += 1
            order.append((it, name, value))
        elif kind == PHASE_END:
            if phase != (name, value):
                problems.append("%s: phase %s %d ends, but %s is open" % (where, name, value, phase))
            if stack:
                problems.append("%s: phase ends with modules %s open" % (where, stack))
            phase = None
        elif kind == MODULE_ENTER:
            if not phase:
                problems.append("%s: module %s outside a phase" % (where, name))
            elif modules_in and phase[0] not in modules_in:
                problems.append("%s: module %s in phase %s" % (where, name, phase[0]))
            stack.append(name)
            seen_modules.add(name)
        elif kind == MODULE_EXIT:
            if not stack or stack[-1] != name:
                problems.append("%s: module %s exits, open: %s" % (where, name, stack))
            else:
                stack.pop()
        else:
            problems.append("%s: unexpected marker kind %d" % (where, kind))

    if it is not None:
        problems.append("end: iteration %d still open" % it)
    if next_iter != iters:
        problems.append("end: %d iterations, expected %d" % (next_iter, iters))
    for i in range(iters):
        for mb in range(micro_batches):
            for name in ("forward", "backward"):
                if phases[(i, name, mb)] != 1:
                    problems.append("iteration %d: %d %s phases for micro-batch %d, expected 1"
                                    % (i, phases[(i, name, mb)], name, mb))
            if (i, "forward", mb) in order and (i, "backward", mb) in order and \
               order.index((i, "forward", mb)) > order.index((i, "backward", mb)):
                problems.append("iteration %d: backward %d before forward" % (i, mb))
        if phases[(i, "optimizer", 0)] != 1:
            problems.append("iteration %d: %d optimizer phases, expected 1" % (i, phases[(i, "optimizer", 0)]))
    for m in modules:
        if m not in seen_modules:
            problems.append("module %s never entered (seen: %s)" % (m, " ".join(sorted(seen_modules))))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--iters", type=int, required=True)
    ap.add_argument("--micro-batches", type=int, required=True)
    ap.add_argument("--module", action="append", default=[])
    ap.add_argument("--modules-in", action="append", default=[])
    a = ap.parse_args()
    with open(a.log) as f:
        lines = f.read().splitlines()
    problems = check(lines, a.iters, a.micro_batches, a.module, a.modules_in)
    for p in problems:
        print("%s: %s" % (a.log, p))
    if problems:
        return 1
    print("%s: %d markers, well formed" % (a.log, len(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

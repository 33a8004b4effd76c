#!/usr/bin/env python3
"""normalize.py - `stprof dump -s` of a deterministic program, with what
changes from run to run taken out, so that two recordings of the program
compare event for event (tests/collector/test_golden.sh).

Usage: normalize.py BUILD_DIR DUMP...   (one dump per trace of the run)

Kept: every event, its seq, its type and its fields.  Taken out or
renamed, by first appearance in the run: times (the TIME_NS column, end_ns,
duration), process and thread ids (T1, T2, ...), pids, a module's base,
size, bias and build-id (the path is kept as its file name, the build
directory as $B).  Addresses become objects: each allocation (or segment)
is a new O<n>, a free names the live object it frees (pre: one allocated
before the recording), a range names the live object it starts in and its
offset there (else ext), a stream handle is S<n>.  So a trace compares by
what it says of objects, not by where libc's malloc happened to put them.  A call path's
frames become the module's file name, and for a program or library built
here the function the frame is in (nm): offsets move whenever a compiler or
a libc changes, functions do not.
"""
import bisect
import os
import re
import subprocess
import sys

link = sys.argv[1].rstrip("/")          # the build folder as the run named it
build = os.path.realpath(link)
names = {}     # (kind, raw) -> normalized name, by first appearance
symtabs = {}   # module path -> (sorted starts, [(start, end, name)])


def rename(kind, raw):
    key = (kind, raw)
    if key not in names:
        names[key] = f"{kind}{sum(1 for k in names if k[0] == kind) + 1}"
    return names[key]


class Objects:
    """The live objects of one trace, by address."""

    def __init__(self):
        self.live, self.n = {}, 0

    def new(self, raw, size):
        self.n += 1
        name = f"O{self.n}"
        self.live[int(raw, 16)] = (int(size or 0), name)
        return name

    def gone(self, raw):
        o = self.live.pop(int(raw, 16), None)
        return o[1] if o else "pre"

    def at(self, raw):
        a = int(raw, 16)
        for start, (size, name) in self.live.items():
            if start <= a < start + max(size, 1):
                return name if a == start else f"{name}+{a - start}"
        return "ext"


def handle(raw):
    v = int(raw, 16)
    return raw if v < 0x10000 else rename("S", v)


def symbols(path):
    if path not in symtabs:
        rows = []
        if (path.startswith(build + "/") or path.startswith(link + "/")) and os.path.exists(path):
            out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) == 4 and p[2] in "tTwW":
                    rows.append((int(p[0], 16), int(p[0], 16) + int(p[1], 16), p[3]))
        rows.sort()
        symtabs[path] = ([r[0] for r in rows], rows)
    return symtabs[path]


def frame(ip, modules):
    for base, size, bias, path in modules:
        if base <= ip < base + size:
            starts, rows = symbols(path)
            off = ip - bias
            i = bisect.bisect_right(starts, off) - 1
            fn = rows[i][2] if i >= 0 and rows[i][0] <= off < rows[i][1] else ""
            return os.path.basename(path) + (":" + fn if fn else "")
    return "?"


def main():
    for dump in sys.argv[2:]:
        modules, objs = [], Objects()
        print(f"== trace {len([k for k in names if k[0] == 'trace']) + 1}")
        rename("trace", dump)
        for line in open(dump):
            seq, _time, tid, typ, rest = (line.rstrip("\n").split(" ", 4) + [""])[:5]
            fields = re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', rest)
            out = [seq, rename("T", tid), typ]
            f = dict(fields)
            if typ == "module":
                p = f["path"].strip('"')
                modules.append((int(f["base"], 16), int(f["size"]), int(f["bias"], 16), p))
            for k, v in fields:
                if k in ("pid", "ppid", "end_ns", "duration", "base", "size" if typ == "module" else "", "bias",
                         "build_id"):
                    continue
                if k == "thread":
                    v = rename("T", v)
                elif k in ("path", "cmdline"):
                    v = v.replace(link, "$B").replace(build, "$B")
                    if k == "path":
                        v = '"' + os.path.basename(v.strip('"')) + '"'
                    v = re.sub(r"\.stp\.\d+", ".stp.PID", v)
                elif k == "addr":
                    v = objs.new(v, f.get("size")) if typ in ("alloc", "segment_reserve") else objs.gone(v)
                elif k == "stream":
                    v = handle(v)
                elif k in ("read", "write", "readwrite"):
                    a, n = v.split("+")
                    v = objs.at(a) + "+" + n
                elif k == "stack":
                    v = ";".join(frame(int(x, 16), modules) for x in v.split(";"))
                out.append(f"{k}={v}")
            print(" ".join(out))


if __name__ == "__main__":
    main()

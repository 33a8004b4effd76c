#!/usr/bin/python3
"""planted_check.py REPORT.json SOURCE PATTERN... - the findings of a
planted program's report (stprof report -f json) are exactly its planted
ones: one finding per PATTERN, at the line of SOURCE marked
PLANT:<pattern> (the finding's call site names that line), and no other
finding.  Prints each planted finding with its rank, distance and where it
falls on the timeline, then the findings the program's structure explains
(kept apart) by reason.  Exits 1 on the first mismatch, after printing what
it got.  Shared by tests/python/test_planted.sh (CPU) and
tests/gpu/check_52_planted.sh (the same programs on a GPU)."""
import collections
import json
import os
import re
import sys

report, source, patterns = sys.argv[1], sys.argv[2], sys.argv[3:]
d = json.load(open(report))
base = os.path.basename(source)
lines = {}
for n, text in enumerate(open(source), 1):
    m = re.search(r"PLANT:([a-z-]+)", text)
    if m and "<pattern>" not in text:
        lines[m.group(1)] = n
sites = {s["id"]: s for s in d["sites"]}


def at_line(f, line):
    """the finding's call site passes through BASE:LINE"""
    frames = sites.get(f["site"], {}).get("frames", [])
    want = re.compile(r"\b%s:%d\b" % (re.escape(base), line))
    return any(want.search(fr.get("text", "")) for fr in frames)


def where(f):
    frames = sites.get(f["site"], {}).get("frames", [])
    for fr in frames:
        if base in fr.get("text", ""):
            return fr["text"]
    return frames[0]["text"] if frames else "?"


ok = True
found = set()
for rank, f in enumerate(d["findings"], 1):
    pat = f["pattern"]
    planted = pat in patterns and pat in lines and at_line(f, lines[pat])
    tag = "planted" if planted else "OTHER"
    print("  %2d. %-20s %-8s %s, %s %s%s" % (rank, pat, tag, where(f), f["max_distance"], f["distance_unit"],
                                           (", " + f["span"]) if f.get("span") else ""))
    if planted and pat not in found:
        found.add(pat)
    else:
        ok = False
for pat in patterns:
    if pat not in found:
        print("FAIL: %s not reported at %s:%s" % (pat, base, lines.get(pat)))
        ok = False
if len(d["findings"]) != len(patterns):
    print("FAIL: %d findings, %d planted" % (len(d["findings"]), len(patterns)))
    ok = False
why = collections.Counter()
for f in d.get("expected", []):
    why[f["expected"]] += f["objects"]
print("  apart: " + (", ".join("%s %d objects" % kv for kv in sorted(why.items())) or "none"))
acc = d.get("accesses", {})
if acc.get("sanitizer") == 1:
    print("  accesses: %d launches, %d sampled, %d timed, %d unplaced (%d objects unjudged), kinds %#x" %
          (acc["launches"], acc["sampled"], acc["timed"], acc["unplaced"], acc["unsure_objects"],
           acc["patched_kinds"]))
sys.exit(0 if ok else 1)

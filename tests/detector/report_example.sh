#!/bin/sh
# report_example.sh - the bundled example's planted bugs (examples/bugs.c),
# recorded by the real collector, are the report's only findings: the leak
# at cache_batch_stats (bugs.c:22) and the late free at
# snapshot_activations (bugs.c:49), with exact counts.  Function and line
# come from the report's frames when it symbolizes, else from addr2line on
# the frames' module offsets.  Also a clean run has no finding, and the
# classes hold what train.c allocates.  Exit 77 (skipped) without the
# collector.
set -eu
: "${STPROF_BUILD:?}"
B=$STPROF_BUILD
if [ ! -f "$B/libstprof.so" ] || [ ! -x "$B/train" ]; then
	echo "skipped: no collector or no example in $B"
	exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/stprof" record -q -o "$T/bugs.stp" "$B/train" -i 4 -m 2 --plant-bugs >/dev/null
"$B/stprof" record -q -o "$T/clean.stp" "$B/train" -i 4 -m 2 >/dev/null
"$B/stprof" report --format json --frames 8 -o "$T/bugs.json" "$T/bugs.stp"
"$B/stprof" report --format json --frames 8 -o "$T/clean.json" "$T/clean.stp"
"$B/stprof" report "$T/bugs.stp" >"$T/bugs.txt"
python3 - "$T/bugs.json" "$T/clean.json" <<'PY'
import json, subprocess, sys
bugs = json.load(open(sys.argv[1]))
clean = json.load(open(sys.argv[2]))

def functions(frames):
    """(function, file:line) pairs of a call path, from the report or addr2line"""
    out = []
    for i, f in enumerate(frames):
        if f['function']:
            out.append((f['function'].split(' (inlined')[0], '%s:%s' % ((f['file'] or '').split('/')[-1], f['line'])))
            continue
        if not f['module']:
            continue
        off = f['offset'] - 1  # frames shown are return addresses
        r = subprocess.run(['addr2line', '-f', '-i', '-e', f['module'], hex(off)], capture_output=True, text=True)
        lines = r.stdout.split('\n')
        for k in range(0, len(lines) - 1, 2):
            out.append((lines[k], lines[k + 1].split('/')[-1].split(' ')[0]))
    return out

by = {}
for f in bugs['findings']:
    by.setdefault(f['pattern'], []).append(f)
assert sorted(by) == ['late-free', 'memory-leak'], sorted(by)
assert len(by['memory-leak']) == 1 and len(by['late-free']) == 1, by
leak, late = by['memory-leak'][0], by['late-free'][0]
# -i 4 -m 2: one 144-byte block leaked per micro-batch, one snapshot per micro-batch
assert (leak['objects'], leak['bytes']) == (8, 1152), leak
assert late['objects'] == 8, late
site = {s['id']: s for s in bugs['sites']}  # a bounded list: look up by id
lf = functions(site[leak['site']]['frames'])
tf = functions(site[late['site']]['frames'])
assert ('cache_batch_stats', 'bugs.c:22') in lf, lf
assert ('snapshot_activations', 'bugs.c:49') in tf, tf
c = bugs['classes']
assert c['leaked']['objects'] == 8, c
assert c['persistent']['objects'] > 0 and c['scoped']['objects'] > 0 and c['transient']['objects'] > 0, c
assert bugs['timeline']['iteration_source'] == 'markers' and len(bugs['timeline']['iterations']) == 4
assert clean['findings'] == [], clean['findings']
assert clean['classes']['leaked']['objects'] == 0
print('leak at', lf[:3], '\nlate free at', tf[:3])
PY
grep -q "Late free" "$T/bugs.txt"
grep -q "Memory leak: 8 objects" "$T/bugs.txt"
echo "report_example: ok"

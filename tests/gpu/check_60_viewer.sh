#!/bin/sh
# check_60_viewer.sh - the HTML report's viewer on a real GPU run: the small
# GPT of tests/gpu/gpt.py on CUDA (10 iterations) recorded with --torch-cuda=caching (PyTorch's
# own segments recorded), `stprof report -f html`, then:
#   - the data the page embeds (tests/lib/viewer_data.py, no browser): at
#     the viewer's peak the recorded segments are exactly the segments live
#     at the trace's device peak (count, bytes), their blocks exactly the
#     PyTorch tensors live there (count, bytes), every tensor inside a
#     segment, and the objects outside segments are other libraries'
#     (cuBLAS's workspaces);
#   - the PyTorch model's state at the peak: every tensor has a block;
#   - when chromium is installed: the page loads without console errors,
#     hovering the largest tensor shows a gpt.py line, the segment view at
#     the peak says the same block count; the load time is printed.
# Prints what it measured.  Run by tests/gpu/run.sh (S, B, T, PY set).
set -eu
echo "  a small GPT on CUDA under --torch-cuda=caching, its HTML report's viewer"
cp "$S/tests/gpu/gpt.py" "$T/gpt.py"
"$B/stprof" record -q --torch-cuda=caching -o "$T/g.stp" -- "$PY" "$T/gpt.py" "$T/stats.json" 10 >/dev/null
t0=$(date +%s.%N)
"$B/stprof" report -f html -o "$T/g.html" "$T/g.stp"
t1=$(date +%s.%N)
echo "  report -f html: $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s, page $(du -k "$T/g.html" | cut -f1) KiB"
# the device peak from the trace itself: live pool-1 tensors and live segments at the first maximum of device 0's live bytes
"$B/stprof" dump -t alloc -t free -t segment_reserve -t segment_release "$T/g.stp" >"$T/dump.txt"
"$PY" - "$S" "$T/g.html" "$T/dump.txt" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1] + '/tests/lib')
import viewer_data
live, tensors, segs, cur, best, at = {}, {}, {}, 0, -1, None
for line in open(sys.argv[3]):
    f = line.split()
    if len(f) < 4:
        continue
    kv = dict(x.split('=', 1) for x in f[4:] if '=' in x)
    if kv.get('kind') != 'device' or kv.get('device') != '0':
        continue
    t, a = f[3], kv.get('addr')
    if t == 'alloc':
        if a in live:  # an allocation at a live address ends the old one (a lost free), as the detector does
            cur -= live.pop(a)[0]
        live[a] = (int(kv['size']), kv.get('pool') == '1')
        cur += int(kv['size'])
    elif t == 'free' and a in live:
        cur -= live.pop(a)[0]
    elif t == 'segment_reserve':
        segs[a] = int(kv['size'])
    elif t == 'segment_release':
        segs.pop(a, None)
    if t == 'alloc' and cur > best:
        best = cur
        at = ([s for s, p in live.values() if p], [s for s, p in live.values() if not p], dict(segs))
want_t, want_o, want_s = at
R = viewer_data.load(sys.argv[2])[0]
peak = max(range(len(R['tot'])), key=lambda e: (R['tot'][e], -e))
segs, blocks, outside = viewer_data.state_at(R, 'real', peak)
fail = 0
print('  trace at the device peak (%d B): %d tensors %d B, %d other allocations, %d segments %d B' % (
    best, len(want_t), sum(want_t), len(want_o), len(want_s), sum(want_s.values())))
print('  viewer at its peak (%d B): %d blocks %d B in %d segments %d B, %d objects outside segments' % (
    R['tot'][peak], len(blocks), sum(s for _, s in blocks.values()), len(segs), sum(b - a for a, b in segs),
    outside))
if R['tot'][peak] != best:
    print('FAIL: the viewer peaks at %d B, the trace at %d B' % (R['tot'][peak], best)); fail = 1
if len(segs) != len(want_s) or sum(b - a for a, b in segs) != sum(want_s.values()):
    print('FAIL: the segments differ'); fail = 1
if sorted(s for _, s in blocks.values()) != sorted(want_t):
    print('FAIL: the blocks are not the live tensors'); fail = 1
if outside != len(want_o):
    print('FAIL: %d objects outside segments, %d other allocations' % (outside, len(want_o))); fail = 1
for S in R['meta']['segs']:
    if S['key'] == 'm0':
        _, mb, mo = viewer_data.state_at(R, 'm0', peak)
        print('  model %s at the peak: %d blocks, %d outside' % (S['name'], len(mb), mo))
        if len(mb) != len(want_t):
            print('FAIL: the PyTorch model has %d blocks, %d tensors are live' % (len(mb), len(want_t))); fail = 1
sys.exit(fail)
PYEOF
if command -v chromium >/dev/null 2>&1; then
	"$PY" - "$S" "$T/g.html" <<'PYEOF'
import json, sys, time
sys.path.insert(0, sys.argv[1] + '/tests/lib')
from cdp import Browser
with Browser() as b:
    p = b.open('file://' + sys.argv[2], 1500, 1000)
    p.wait('window.stprofViewer && (stprofViewer.ready || stprofViewer.error)', 60)
    err = p.eval('stprofViewer.error || ""')
    print('  chromium: viewer ready in %.0f ms%s' % (p.eval('stprofViewer.loadMs'), ', ERROR ' + err if err else ''))
    i = p.eval('(() => { const R = stprofViewer.V.ranks[0]; let b = 0; for (let i = 0; i < R.n; i++) '
               'if (R.size[i] > R.size[b]) b = i; return b; })()')
    pt = json.loads(p.eval('JSON.stringify(stprofViewer.objectPoint(0, %d))' % i))
    p.mouse('mouseMoved', pt['x'], pt['y'])
    time.sleep(0.3)
    tip = p.eval('document.querySelector(".stpv-tip").innerText')
    print('  hover on the largest tensor: ' + tip.replace('\n', ' | '))
    p.eval('document.querySelector(".stpv-segpeak").click()')
    time.sleep(0.3)
    seg = p.eval('document.querySelector(".stpv-segtext").innerText').split('\n')[0]
    print('  segment view: ' + seg)
    b.pump(0.3)
    bad = err or p.errors or 'gpt.py:' not in tip or 'the peak' not in seg
    if p.errors:
        print('FAIL: console errors: %s' % p.errors)
    sys.exit(1 if bad else 0)
PYEOF
else
	echo "  no chromium here: the browser part skipped (the data checks above ran)"
fi

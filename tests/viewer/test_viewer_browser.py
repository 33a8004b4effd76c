#!/usr/bin/env python3
"""test_viewer_browser.py - the HTML report's interactive viewer in a real
headless Chromium (tests/lib/cdp.py): the page loads without console errors
and fetches nothing; hovering a known allocation shows its Python line,
module and phase; clicking pins it with its accesses and findings; the
wheel zooms (the visible range and the axis change); the allocator state at
the peak holds the expected blocks, recorded and modelled; a finding's row
pins its worst object; two ranks are drawn side by side; a real PyTorch run
loads and hovers.  Exit 77 (skipped) without chromium.

STPROF_VIEWER_SHOTS=DIR keeps the screenshots there.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SRC = os.environ.get('STPROF_SRC', os.path.join(os.path.dirname(__file__), '..', '..'))
BUILD = os.environ.get('STPROF_BUILD', 'build')
sys.path.insert(0, os.path.join(SRC, 'tests', 'lib'))
from cdp import Browser  # noqa: E402
import viewer_data  # noqa: E402

MIB = 1 << 20
failures = []


def check(cond, what):
    print(('ok   ' if cond else 'FAIL ') + what)
    if not cond:
        failures.append(what)


def run(*cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit('FAIL: %s: exit %d\n%s%s' % (' '.join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def distinct_colours(png):
    data = open(png, 'rb').read()
    pos, idat = 8, b''
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        if kind == b'IDAT':
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    return len(set(raw[i:i + 3] for i in range(0, len(raw) - 3, 97)))


def viewer_ready(page):
    page.wait('window.stprofViewer && (stprofViewer.ready || stprofViewer.error)', 60)
    err = page.eval('stprofViewer.error || ""')
    check(not err, 'the viewer starts' + (': ' + err if err else ''))
    page.eval('document.getElementById("stpv").scrollIntoView()')


def js(page, expr):
    return json.loads(page.eval('JSON.stringify(%s)' % expr))


def hover(page, r, i):
    pt = js(page, 'stprofViewer.objectPoint(%d, %d)' % (r, i))
    if not pt:
        return None
    # the tip is drawn on a later animation frame: wait for it to be drawn
    # (the old one cleared first) rather than a fixed time, which a loaded
    # machine outlasts; a tip that never comes is left for the caller's check
    page.eval('(() => { const t = document.querySelector(".stpv-tip"); '
              'if (t) { t.innerHTML = ""; t.style.display = "none"; } })()')
    page.mouse('mouseMoved', pt['x'], pt['y'])
    try:
        page.wait('(() => { const t = document.querySelector(".stpv-tip"); '
                  'return t && t.style.display === "block" && t.innerText.length > 0; })()', 20)
    except TimeoutError:
        pass
    return pt


def shot(page, tmp, name):
    path = os.path.join(tmp, name)
    page.screenshot(path)
    keep = os.environ.get('STPROF_VIEWER_SHOTS')
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(path, os.path.join(keep, name))
    return path


def gpu_trace(b, tmp):
    trace, html = os.path.join(tmp, 'gpu.stp'), os.path.join(tmp, 'gpu.html')
    run(os.path.join(BUILD, 'viewer_trace'), 'gpu', trace)
    run(os.path.join(BUILD, 'stprof'), 'report', '-f', 'html', '-o', html, trace)
    text = open(html).read()
    check(not any(s in text for s in ('src="http', "src='http", 'src=http', 'href="http', 'href=http')),
          'the page loads nothing from the network')
    # the data as embedded, read without the browser (tests/lib/viewer_data.py)
    R = viewer_data.load(html)[0]
    check((R['meta']['nobj'], R['meta']['nev']) == (10, 16), 'embedded: 10 objects, 16 events')
    peak = max(range(len(R['tot'])), key=lambda e: (R['tot'][e], -e))
    segs, blocks, outside = viewer_data.state_at(R, 'real', peak)
    check(R['tot'][peak] == 17 * MIB and segs == [(0x10000000, 0x12000000)] and outside == 0 and
          sorted(s for _, s in blocks.values()) == [MIB, MIB, MIB, 2 * MIB, 4 * MIB, 8 * MIB],
          'embedded state at the peak: %s, %s' % (segs, sorted(blocks.values())))
    page = b.open('file://' + html, 1500, 1000)
    viewer_ready(page)
    b.pump(0.3)
    check(page.errors == [], 'no console errors on load: %s' % page.errors)
    check(js(page, 'stprofViewer.V.ranks[0].n') == 10, 'the 10 device objects are embedded')

    # the refused request: a mark in the "refused" band, its tip names it
    pts = js(page, 'stprofViewer.bandPoints(0, "refused")')
    check(len(pts) == 1, 'one refused request in the bands: %s' % pts)
    if pts:
        page.eval('(() => { const t = document.querySelector(".stpv-tip"); if (t) t.style.display = "none"; })()')
        page.mouse('mouseMoved', pts[0]['x'] - 1, pts[0]['y'])
        try:
            page.wait('(() => { const t = document.querySelector(".stpv-tip"); '
                      'return t && t.style.display === "block"; })()', 20)
        except TimeoutError:
            pass
        tip = page.eval('document.querySelector(".stpv-tip").innerText')
        check('refused: 64.0 MiB asked for' in tip and 'model.py:77 in evaluate' in tip,
              'hovering the mark names the request and its line: %r' % tip)

    # hover the second iteration's activation
    a = [i for i in range(10) if page.eval('stprofViewer.V.ranks[0].userLine(%d)' % i) == 'model.py:42 in forward']
    check(len(a) == 3, 'three activations made at model.py:42')
    pt = hover(page, 0, a[1])
    check(pt is not None, 'the activation is drawn')
    tip = page.eval('document.querySelector(".stpv-tip").innerText')
    check('model.py:42 in forward' in tip and '4.00 MiB' in tip, 'hover shows its size and line: %r' % tip)
    detail = page.eval('document.querySelector(".stpv-detail").innerText')
    for want in ('model.encoder', 'forward, iteration 1', 'backward, iteration 1', 'scoped'):
        check(want in detail, 'hover shows %r' % want)

    # click pins it, with its accesses and findings
    page.click(pt['x'], pt['y'])
    time.sleep(0.2)
    detail = page.eval('document.querySelector(".stpv-detail").innerText')
    check('Pinned object' in detail, 'click pins the object')
    check('matmul_kernel' in detail and 'backward_kernel' in detail, 'the pinned object lists its accesses')
    check(js(page, 'stprofViewer.V.pin') == {'r': 0, 'i': a[1]}, 'the pin is that object')

    # zoom: the wheel narrows the visible range and the axis changes
    before = js(page, 'stprofViewer.view()')
    box = js(page, '(() => { const r = document.querySelector(".stpv-over").getBoundingClientRect(); '
                   'return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()')
    page.mouse('mouseWheel', box['x'], box['y'], delta_y=-600)
    time.sleep(0.3)
    after = js(page, 'stprofViewer.view()')
    check(after['f1'] - after['f0'] < 0.7 * (before['f1'] - before['f0']),
          'the wheel zooms in: %s -> %s' % ((before['f0'], before['f1']), (after['f0'], after['f1'])))
    check(after['labels'] != before['labels'], 'the axis shows the new range')
    shot(page, tmp, 'viewer_gpu_zoomed.png')
    page.eval('document.querySelector(".stpv-reset").click()')

    # the allocator state at the peak: W, the last A and G, the three L
    page.eval('document.querySelector(".stpv-segpeak").click()')
    time.sleep(0.2)
    seg = js(page, 'stprofViewer.segments()')
    check(seg['cursor'] == seg['peak'], 'the segment view moved to the peak')
    check(len(seg['segments']) == 1 and seg['segments'][0]['size'] == 32 * MIB and seg['reserved'] == 32 * MIB,
          'one recorded segment of 32 MiB: %s' % [(s['addr'], s['size']) for s in seg['segments']])
    blocks = sorted((x['addr'] - 0x10000000, x['size']) for x in seg['segments'][0]['blocks'])
    want = [(0, 8 * MIB), (8 * MIB, 4 * MIB), (12 * MIB, 2 * MIB), (24 * MIB, MIB), (25 * MIB, MIB), (26 * MIB, MIB)]
    check(blocks == want, 'the recorded segment at the peak holds W, A, G and three L: %s' % blocks)
    check(seg['allocated'] == 17 * MIB and seg['holes'] == 2, 'allocated 17 MiB, free in 2 holes (14-24 MiB, 27-32 MiB)')
    text = page.eval('document.querySelector(".stpv-segtext").innerText')
    check('6 blocks' in text and 'the peak' in text, 'the segment view says so: %r' % text)
    shot(page, tmp, 'viewer_gpu_segments.png')
    page.eval('stprofViewer.setSource("m0")')
    seg = js(page, 'stprofViewer.segments()')
    nblocks = sum(len(s['blocks']) for s in seg['segments'])
    check(nblocks == 6 and seg['allocated'] >= 17 * MIB, 'the PyTorch model at the peak has the 6 blocks too')
    page.eval('stprofViewer.setSource("real")')

    # a finding's row pins its worst object
    page.eval('document.querySelector(".stpv-tabs [data-tab=findings]").click()')
    rows = page.eval('Array.from(document.querySelectorAll(".stpv-detail tr[data-stpv-finding]"))'
                     '.map(r => r.innerText)')
    leak = [k for k, r in enumerate(rows) if r.startswith('Memory leak')]
    check(bool(leak), 'the findings tab lists the leak: %s' % rows)
    if leak:
        page.eval('document.querySelectorAll(".stpv-detail tr[data-stpv-finding]")[%d].click()' % leak[0])
        time.sleep(0.2)
        pin = js(page, 'stprofViewer.V.pin')
        line = pin and page.eval('stprofViewer.V.ranks[0].userLine(%d)' % pin['i'])
        check(line == 'model.py:99 in leak', 'the leak finding pins a leaked buffer: %r' % line)
        hl = page.eval('document.querySelector(".stpv-hl").innerText')
        check('Memory leak' in hl, 'and highlights its objects: %r' % hl)
    # the static report's findings table links to the viewer too
    page.eval('document.querySelector("tr.finding[data-stp-finding]").click()')
    time.sleep(0.2)
    check(js(page, 'stprofViewer.V.pin') is not None, 'a row of the static findings table pins its object')

    png = shot(page, tmp, 'viewer_gpu.png')
    check(distinct_colours(png) > 20, 'the screenshot is not blank')
    b.pump(0.2)
    check(page.errors == [], 'no console errors after the interactions: %s' % page.errors)


def ranks(b, tmp):
    traces = []
    for r in (0, 1):
        t = os.path.join(tmp, 'job.stp.rank%d' % r)
        run(os.path.join(BUILD, 'viewer_trace'), 'gpu', t, str(r))
        traces.append(t)
    html = os.path.join(tmp, 'ranks.html')
    run(os.path.join(BUILD, 'stprof'), 'report', '-f', 'html', '-o', html, *traces)
    page = b.open('file://' + html, 1500, 1100)
    viewer_ready(page)
    labels = page.eval('Array.from(document.querySelectorAll(".stpv-label")).map(e => e.innerText)')
    check(len(labels) == 2 and labels[0].startswith('rank 0') and labels[1].startswith('rank 1'),
          'two ranks side by side: %s' % labels)
    peaks = js(page, 'stprofViewer.V.ranks.map(R => R.max)')
    check(peaks == [17 * MIB, 21 * MIB], 'each rank its own peak: %s' % peaks)
    pt = hover(page, 1, 1)
    tip = page.eval('document.querySelector(".stpv-tip").innerText')
    check(pt is not None and 'model.py:42 in forward' in tip and '8.00 MiB' in tip,
          "hover on rank 1 shows rank 1's activation: %r" % tip)
    shot(page, tmp, 'viewer_ranks.png')
    b.pump(0.2)
    check(page.errors == [], 'no console errors with two ranks: %s' % page.errors)


def torch_run(b, tmp):
    py = os.environ.get('STPROF_PYTHON') or '/usr/bin/python3'
    if subprocess.run([py, '-c', 'import torch'], capture_output=True).returncode != 0:
        print('skip the PyTorch run: no torch for %s' % py)
        return
    trace, html = os.path.join(tmp, 'tt.stp'), os.path.join(tmp, 'tt.html')
    run(os.path.join(BUILD, 'stprof'), 'record', '-q', '-o', trace, '--', py,
        os.path.join(SRC, 'examples', 'torch_transformer.py'), '--iters', '2')
    run(os.path.join(BUILD, 'stprof'), 'report', '-f', 'html', '-o', html, trace)
    page = b.open('file://' + html, 1500, 1000)
    viewer_ready(page)
    n = js(page, 'stprofViewer.V.ranks[0].n')
    check(n > 1000, 'a PyTorch run: %d tensors embedded' % n)
    i = js(page, '(() => { const R = stprofViewer.V.ranks[0]; let b = 0; '
                 'for (let i = 0; i < R.n; i++) if (R.size[i] > R.size[b]) b = i; return b; })()')
    pt = hover(page, 0, i)
    tip = page.eval('document.querySelector(".stpv-tip").innerText')
    check(pt is not None and 'torch_transformer.py:' in tip, 'hover shows the script line: %r' % tip)
    shot(page, tmp, 'viewer_torch.png')
    b.pump(0.2)
    check(page.errors == [], 'no console errors on a PyTorch run: %s' % page.errors)


def main():
    if not Browser.find():
        print('no chromium: skipped')
        return 77
    tmp = tempfile.mkdtemp(prefix='stprof-viewer-')
    try:
        with Browser() as b:
            gpu_trace(b, tmp)
            ranks(b, tmp)
            torch_run(b, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print('%d checks failed' % len(failures))
        return 1
    print('viewer_browser: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""viewer_load.py HTML [RUNS] - how fast the HTML report's viewer opens and
responds in headless Chromium (tests/lib/cdp.py), a fresh tab per run:

  load    navigation start to the viewer drawn (performance.now() when it
          is ready: parsing the page, decoding and inflating the data,
          building the objects, the first render)
  render  a whole-run redraw (the level-of-detail sweep)
  zoom    a redraw at a tenth of the run
  hover   the object under the pointer found and outlined
  seg     the allocator state at the peak drawn

Prints the median and the range over RUNS (5) runs, in ms."""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tests', 'lib'))
from cdp import Browser  # noqa: E402

PROBE = '''(() => {
  const V = stprofViewer.V, P = V.panels[0], out = {};
  V.f0 = 0; V.f1 = 1; V.yzoom = null;
  let t = performance.now(); stprofViewer.renderAll(); out.render = performance.now() - t;
  const R = P.R, mid = R.et[R.peakEv] / V.tmax;
  V.f0 = Math.max(0, mid - 0.05); V.f1 = Math.min(1, mid + 0.05);
  t = performance.now(); stprofViewer.renderAll(); out.zoom = performance.now() - t;
  const r = P.over.getBoundingClientRect();
  t = performance.now();
  for (let k = 0; k < 10; k++) stprofViewer.hoverAt(0, r.width * (0.1 + 0.08 * k) - 64, r.height * 0.5);
  out.hover = (performance.now() - t) / 10;
  t = performance.now(); V.segKeyLast = null; stprofViewer.drawSegments(); out.seg = performance.now() - t;
  return JSON.stringify(out);
})()'''


def main():
    html = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    got = {k: [] for k in ('load', 'render', 'zoom', 'hover', 'seg')}
    info = None
    with Browser() as b:
        for _ in range(runs):
            page = b.open('file://' + html, 1500, 1000)
            page.wait('window.stprofViewer && (stprofViewer.ready || stprofViewer.error)', 120)
            if page.eval('stprofViewer.error || ""'):
                sys.exit('viewer error: ' + page.eval('stprofViewer.error'))
            got['load'].append(page.eval('stprofViewer.loadMs'))
            for k, v in json.loads(page.eval(PROBE)).items():
                got[k].append(v)
            info = page.eval('JSON.stringify(stprofViewer.V.ranks.map(R => [R.n, R.ne, R.m.objects_total]))')
            page.call('Page.close')
    n = json.loads(info)
    print('  objects drawn %s of %s, %s events; page %.1f MiB' % (
        '+'.join(str(x[0]) for x in n), '+'.join(str(x[2]) for x in n), '+'.join(str(x[1]) for x in n),
        os.path.getsize(html) / 1048576))
    for k, v in got.items():
        print('  %-7s median %7.0f ms  (%.0f - %.0f, %d runs)' % (k, statistics.median(v), min(v), max(v), len(v)))


if __name__ == '__main__':
    main()

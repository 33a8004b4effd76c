#!/bin/sh
# The HTML report's plots read right (no browser needed; report_html.sh
# renders the page in Chromium): y ticks are exact binary sizes, evenly
# spaced, and the top of the axis is labelled above the data; the peak's
# label sits above its point; a model whose series equals another's is
# drawn apart and the legend says so.
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/det_mktrace" train "$T/train.stp"
"$B/stprof" report --format html -o "$T/r.html" "$T/train.stp"
python3 - "$T/r.html" <<'PY'
import re, sys
html = open(sys.argv[1]).read()
units = {'B': 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30}
peak = 1220320  # the scenario's peak (scenarios.h)
for svg in re.findall(r"<svg (?:id=memory|class=models).*?</svg>", html, re.S):
    ticks = [(float(y), float(v) * units[u]) for y, v, u in
             re.findall(r"<text class=ytick x=\S+ y=(\S+) text-anchor=end>([\d.]+) (\w+)<", svg)]
    assert len(ticks) >= 3, ticks
    vals = [v for _, v in ticks]
    step = vals[1] - vals[0]
    assert step > 0 and int(step) & (int(step) - 1) == 0, 'step %r is not a power of two bytes' % step
    assert all(abs(b - a - step) < 1 for a, b in zip(vals, vals[1:])), vals
    assert vals[-1] >= peak, 'the top tick %r is below the peak' % vals[-1]
m = re.search(r"<circle cx=\S+ cy=(\S+) r=4 fill='#e15759'/><text class=peak x=\S+ y=(\S+)", html)
assert m and float(m.group(2)) < float(m.group(1)), 'the peak label is not above its point'
assert 'class=same>(the same as pytorch' in html, 'identical model series not told apart'
assert re.search(r"transform='translate\(0,-2\.5\)'", html), 'the identical series is not drawn apart'
print('report_html_axes: ok')
PY

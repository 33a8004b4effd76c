#!/bin/sh
# report_html.sh - the HTML report renders: headless Chromium loads the page
# (no network), the DOM has the three SVG plots with their marks and the
# findings table, and a screenshot is not blank.  Skipped (77) when no
# chromium is installed.
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || { echo "no chromium: skipped"; exit 77; }

"$B/det_mktrace" train "$T/train.stp"
"$B/stprof" report --format html -o "$T/r.html" "$T/train.stp"
grep -q "<svg id=memory" "$T/r.html" || fail "no memory plot"
if grep -Eq "(src|href)=['\"]?https?:" "$T/r.html"; then fail "the page loads something from the network"; fi

flags="--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions --user-data-dir=$T/profile"
timeout 120 "$CHROME" $flags --dump-dom "file://$T/r.html" >"$T/dom.html" 2>"$T/chrome.log" ||
	fail "chromium --dump-dom failed: $(tail -3 "$T/chrome.log")"
for want in '<svg id="memory"' '<polyline class="live"' '<svg id="classes"' '<rect class="cls"' \
	'<svg id="sites"' '<rect class="site"' '<tr class="finding"' \
	'<svg class="models"' '<polyline class="model-reserved"' '<polyline class="model-allocated"' '<tr class="model"' 'Late free' 'Memory leak'; do
	grep -q "$want" "$T/dom.html" || fail "DOM lacks $want"
done
timeout 120 "$CHROME" $flags --window-size=1100,1400 --screenshot="$T/shot.png" "file://$T/r.html" \
	>"$T/chrome2.log" 2>&1 || fail "chromium --screenshot failed: $(tail -3 "$T/chrome2.log")"
python3 - "$T/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, w, h = 8, b'', 0, 0
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h = struct.unpack('>II', body[:8])
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
distinct = len(set(raw[i] for i in range(0, len(raw), 7)))
assert w >= 800 and h >= 800, 'tiny screenshot %dx%d' % (w, h)
assert distinct > 20, 'blank screenshot (%d distinct byte values)' % distinct
print('screenshot %dx%d, %d distinct byte values' % (w, h, distinct))
PY
echo "report_html: ok"

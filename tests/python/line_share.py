"""line_share.py REPORT.json SCRIPT [TOP] - of the bytes live at the
analyzed space's peak, the share held by the report's first TOP (10) call
sites whose user_frame is a line of SCRIPT (a file name), as a percentage
with one decimal; then, one per line, the sites without such a line
(their first frame's text).  For the tests and the GPU check of Python
lines (test_torch_lines.sh, tests/gpu/check_65_lines.sh)."""
import json
import os
import sys

r = json.load(open(sys.argv[1]))
script = os.path.basename(sys.argv[2])
top = int(sys.argv[3]) if len(sys.argv) > 3 else 10
peak = r["peak"]["bytes"]
mine, other = 0, []
for s in r["sites"][:top]:
    u = s.get("user_frame")
    if u and u.get("file") and os.path.basename(u["file"]) == script:
        mine += s["peak_bytes"]
    elif s["peak_bytes"]:
        other.append(s["frames"][0]["text"] if s["frames"] else "(no call path)")
print("%.1f" % (100.0 * mine / peak if peak else 0.0))
for o in other:
    print(o)

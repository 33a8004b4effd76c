"""line_share.py REPORT.json SCRIPT [TOP] - how much of the program's
tensor bytes live at the analyzed space's peak the report puts at lines of
SCRIPT (a file name).  The program's bytes are the peak's less the
libraries' own buffers (sites marked "library": cuBLAS's workspaces, made
at the user's first matmul and kept by the library).  Prints:
  1. the share of those bytes held by the TOP (10) lines of SCRIPT that
     hold the most (the sites summed by their user_frame's line, as
     `stprof report --group line` sums them: the per-call-site rows split a
     line by operator, module and checkpointing, however well each row
     points at the script), as a percentage with one decimal;
  2. a summary: the share at SCRIPT's lines over all sites, the library
     buffers set apart, and whether the report listed every site (run
     `stprof report -f json -n N` with N at least the sites there are);
  3. then, one per line, the sites without a line of SCRIPT that hold
     bytes at the peak (their first frame's text).
For the tests and the GPU check of Python lines (test_torch_lines.sh,
test_gpt_lines.sh, tests/gpu/check_65_lines.sh)."""
import json
import os
import sys

r = json.load(open(sys.argv[1]))
script = os.path.basename(sys.argv[2])
top = int(sys.argv[3]) if len(sys.argv) > 3 else 10
peak = r["peak"]["bytes"]
lines, other = {}, []
lib_bytes = lib_sites = mine_all = 0
for s in r["sites"]:
    if s.get("library"):
        lib_bytes += s["peak_bytes"]
        lib_sites += s["peak_bytes"] > 0
        continue
    u = s.get("user_frame")
    if u and u.get("file") and os.path.basename(u["file"]) == script:
        k = (u["file"], u.get("line"))
        lines[k] = lines.get(k, 0) + s["peak_bytes"]
        mine_all += s["peak_bytes"]
    elif s["peak_bytes"]:
        other.append(s["frames"][0]["text"] if s["frames"] else "(no call path)")
program = peak - lib_bytes
best = sum(sorted(lines.values(), reverse=True)[:top])
print("%.1f" % (100.0 * best / program if program > 0 else 0.0))
total = r.get("sites_total", len(r["sites"]))
print("%.1f%% of the program's %d bytes at the peak at %s's lines (%d lines); library buffers apart: %d bytes "
      "in %d sites; %s" % (100.0 * mine_all / program if program > 0 else 0.0, program, script, len(lines), lib_bytes,
                           lib_sites, "every site listed" if len(r["sites"]) >= total else
                           "%d of %d sites listed" % (len(r["sites"]), total)))
for o in other:
    print(o)

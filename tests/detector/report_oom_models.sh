#!/bin/sh
# An out-of-memory error that fragmentation made (scenarios.h "oomfrag":
# 120 MiB live + a 70 MiB request within the 200 MiB the caching
# allocator had reserved, its free bytes split in two 40 MiB pieces): the
# allocator models try the refused request within what the device had
# given (the most reserved before it, or --capacity).  The as-run model
# refuses it too, expandable segments and raw cudaMalloc serve it, and the
# report names the setting at the refusal (text), in the models' section
# (text, HTML) and in JSON; with a --capacity below what the run held the
# models run out before it.
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$B/det_mktrace" oomfrag "$T/f.stp"
"$B/stprof" report "$T/f.stp" >"$T/f.txt"
grep -A4 "^  refused   1 request for want of memory; the first asked for 70.0 MiB" "$T/f.txt" >"$T/r.txt"
grep -q "with 120 MiB live of 200 MiB reserved" "$T/r.txt" &&
	grep -q "the models, within the 200 MiB the device had given: PyTorch's allocator as run" "$T/r.txt" &&
	grep -q "refuses it too (80.0 MiB free in its segments, the largest block 40.0 MiB)," "$T/r.txt" &&
	grep -q "with PYTORCH_ALLOC_CONF=expandable_segments:True it serves it" "$T/r.txt" ||
	fail "memory: $(cat "$T/r.txt")"
sed -n '/^The request refused/,/^Worst/p' "$T/f.txt" >"$T/m.txt"
grep -q "^  pytorch  *refuses it too  *200 MiB   80.0 MiB   40.0 MiB$" "$T/m.txt" &&
	grep -q "^  pytorch expandable_segments:True  *serves it  *200 MiB   80.0 MiB   80.0 MiB$" "$T/m.txt" &&
	grep -q "^  raw cudaMalloc  *serves it  *120 MiB" "$T/m.txt" &&
	grep -q "^  -> PYTORCH_ALLOC_CONF=expandable_segments:True would have served it" "$T/m.txt" ||
	fail "models: $(cat "$T/m.txt")"
"$B/stprof" report --format json "$T/f.stp" >"$T/f.json"
python3 - "$T/f.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))['models']['devices'][0]['refusal']
M = 1 << 20
assert (r['bytes'], r['capacity'], r['capacity_given']) == (70 * M, 200 * M, False), r
got = {m['label']: (m['served'], m['ooms_before']) for m in r['models']}
assert got['pytorch'] == (False, 0) and got['pytorch expandable_segments:True'] == (True, 0), got
assert got['raw cudaMalloc'] == (True, 0), got
m0 = r['models'][0]
assert (m0['reserved'], m0['free_bytes'], m0['largest_free']) == (200 * M, 80 * M, 40 * M), m0
PY
"$B/stprof" report --format html -o "$T/f.html" "$T/f.stp"
grep -q "<p><b>PYTORCH_ALLOC_CONF=expandable_segments:True</b> would have served it" "$T/f.html" || fail "html"
"$B/stprof" report --capacity 150M "$T/f.stp" >"$T/c.txt"
grep -q "^  pytorch  *runs out before it: 1 request refused" "$T/c.txt" || fail "--capacity: $(cat "$T/c.txt")"
if grep -q "would have served it\|it serves it" "$T/c.txt"; then fail "--capacity 150M: a fix named"; fi
echo ok

#!/bin/sh
# PyTorch's caching allocator near the device's limit (scenarios.h
# "retry"): its own refused cudaMalloc calls (REFUSED, requested 0) are
# attempts, not requests.  One served after it freed its cache is a
# "retried" request, with the request's bytes and the first attempt's
# moment; attempts followed by the allocator's oom report are one refused
# request; one the trace ends on is said to have no known outcome; another
# thread's tensor does not resolve an attempt.  Text, JSON, HTML and the
# Perfetto instants.
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$B/det_mktrace" retry "$T/r.stp"
"$B/stprof" report "$T/r.stp" >"$T/r.txt"
grep -A1 "^  refused   1 request for want of memory; the first asked for 36.0 MiB at 12.0 us$" "$T/r.txt" |
	grep -q "with 21.0 MiB live of 42.0 MiB reserved, at prog+0x4001c8" || fail "refused: $(grep -A1 refused "$T/r.txt")"
grep -q "^  retried   1 request served only after the allocator's own request for memory was$" "$T/r.txt" ||
	fail "no retried line: $(cat "$T/r.txt")"
grep -q "the first asked for 12.0 MiB at 5.0 us$" "$T/r.txt" || fail "retried: the request's bytes, the attempt's moment"
grep -q "^            with 8.00 MiB live of 20.0 MiB reserved, at prog+0x4001c0" "$T/r.txt" || fail "retried: its moment"
grep -q "(1 more request had the allocator's own request refused; the trace ends before" "$T/r.txt" ||
	fail "no unknown outcome"
"$B/stprof" report --format json "$T/r.stp" >"$T/r.json"
python3 - "$T/r.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))['spaces'][0]
M = 1 << 20
assert s['refused']['count'] == 1 and s['refused']['first']['bytes'] == 36 * M, s['refused']
r = s['retried']
assert (r['attempts'], r['served'], r['unknown']) == (4, 1, 1), r
assert (r['first']['bytes'], r['first']['live_bytes'], r['first']['reserved_bytes']) == (12 * M, 8 * M, 20 * M), r
PY
"$B/stprof" report --format html -o "$T/r.html" "$T/r.stp"
grep -q "1 request served only after the allocator freed its cache" "$T/r.html" || fail "html: no retried"
"$B/stprof" export -q -o "$T/r.pftrace" "$T/r.stp"
"$B/stprof" lint-perfetto "$T/r.pftrace" >/dev/null || fail "the timeline does not lint"
n=$(grep -c -a "refused, retried: 40.00 MiB" "$T/r.pftrace" || true)
[ "$n" -ge 1 ] && grep -q -a "refused: 36.00 MiB" "$T/r.pftrace" || fail "perfetto instants"
echo ok

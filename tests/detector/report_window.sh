#!/bin/sh
# report --iteration N / --window T0:T1: the peak (and the sites live at it)
# is the window's, the report says which window, a missing iteration is a
# one-line error.  On the crafted train scenario (scenarios.h: 5 iterations,
# the leak grows the peak by 64 B an iteration, the peak in iteration 4).
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$B/det_mktrace" train "$T/train.stp"
for i in 0 1 2 3 4; do
	"$B/stprof" report --iteration $i "$T/train.stp" >"$T/$i.txt"
	grep -q "peak .*(iteration $i, phase forward)" "$T/$i.txt" || fail "--iteration $i: $(grep 'peak  ' "$T/$i.txt")"
	grep -q "^  window  " "$T/$i.txt" || fail "--iteration $i: the window is not said"
done
"$B/stprof" report --format json --iteration 1 "$T/train.stp" >"$T/1.json"
"$B/stprof" report --format json "$T/train.stp" >"$T/all.json"
python3 - "$T/1.json" "$T/all.json" <<'PY'
import json, sys
one, whole = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert whole['window'] is None and one['window']['end_ns'] > one['window']['begin_ns']
p1, pa = one['spaces'][0]['peak_bytes'], whole['spaces'][0]['peak_bytes']
assert pa == 1220320 and pa - p1 == 3 * 64, (p1, pa)   # three fewer leaked blocks live
assert all(one['classes'][c]['objects'] == whole['classes'][c]['objects'] for c in whole['classes'])
PY
rc=0; "$B/stprof" report --iteration 9 "$T/train.stp" 2>"$T/e" || rc=$?
[ $rc = 1 ] && grep -q "no iteration 9 (iterations 0 to 4)" "$T/e" || fail "--iteration 9: exit $rc: $(cat "$T/e")"
rc=0; "$B/stprof" report --window 2s:1s "$T/train.stp" 2>"$T/e" || rc=$?
[ $rc = 2 ] && grep -q -- "--window wants T0:T1" "$T/e" || fail "--window 2s:1s: exit $rc: $(cat "$T/e")"
echo ok

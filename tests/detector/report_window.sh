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
# a window of frees alone, and one that opens above what it allocates:
# what was live as it opened is its peak (it read 0 B, and the 100 B
# optimizer step's level)
"$B/stprof" report --window 134us:141us "$T/train.stp" >"$T/w.txt"
grep -q "peak      1.16 MiB live in 11 objects at 134.0 us, when the window opened (iteration 4)" "$T/w.txt" ||
	fail "a window of frees: $(grep 'peak  ' "$T/w.txt")"
# a window before the first allocation: nothing live, said so
"$B/stprof" report --window 0us:0.5us "$T/train.stp" >"$T/w0.txt"
grep -q "^  peak      none: nothing of this space was live in the window$" "$T/w0.txt" ||
	fail "an empty window: $(grep 'peak  ' "$T/w0.txt")"
for w in 134us:141us 137us:146us 130us:146us; do
	"$B/stprof" report --format json --top 0 --window $w "$T/train.stp" >"$T/w.json"
	python3 - "$T/w.json" $w <<'PY'
import json, sys
j, w = json.load(open(sys.argv[1])), sys.argv[2]
s = j['spaces'][0]
want = {'134us:141us': (1220320, 11, True), '137us:146us': (1220320 - 50000, 10, True),
        '130us:146us': (1220320, 11, None)}[w]
assert (s['peak_bytes'], s['peak_objects'], s.get('peak_at_window_begin')) == want, (w, s)
assert sum(x['peak_bytes'] for x in j['sites']) == s['peak_bytes'], (w, j['sites'])
PY
done
rc=0; "$B/stprof" report --iteration 9 "$T/train.stp" 2>"$T/e" || rc=$?
[ $rc = 1 ] && grep -q "no iteration 9 (iterations 0 to 4)" "$T/e" || fail "--iteration 9: exit $rc: $(cat "$T/e")"
rc=0; "$B/stprof" report --window 2s:1s "$T/train.stp" 2>"$T/e" || rc=$?
[ $rc = 2 ] && grep -q -- "--window wants T0:T1" "$T/e" || fail "--window 2s:1s: exit $rc: $(cat "$T/e")"
echo ok

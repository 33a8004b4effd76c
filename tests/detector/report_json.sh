#!/bin/sh
# report_json.sh - the JSON report parses and carries the documented fields
# with the crafted scenarios' exact answers (docs/report-json.md).
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/det_mktrace" train "$T/train.stp"
"$B/det_mktrace" patterns "$T/patterns.stp"
"$B/stprof" report --format json -o "$T/train.json" "$T/train.stp"
"$B/stprof" report --format json "$T/patterns.stp" >"$T/patterns.json"
python3 - "$T/train.json" "$T/patterns.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
assert t['schema'] == 'stprof-report' and t['version'] == 1
assert t['trace']['whole'] is True and t['trace']['error'] is None
assert t['trace']['events_by_type']['alloc'] == 56
s = t['spaces'][0]
assert (s['kind'], s['allocs'], s['frees'], s['live_objects_end'], s['peak_bytes']) == ('host', 56, 51, 5, 1220320), s
assert t['peak']['iteration'] == 4 and t['timeline']['phases'][t['peak']['phase']]['name'] == 'forward'
tl = t['timeline']
assert tl['iteration_source'] == 'markers' and len(tl['iterations']) == 5 and tl['steady'] == 1
c = t['classes']
assert (c['persistent']['objects'], c['scoped']['objects'], c['transient']['objects'], c['leaked']['objects']) == (1, 25, 25, 5), c
assert t['sites'][0]['peak_bytes'] == 1000000 and t['sites'][0]['class'] == 'persistent'
assert t['sites'][0]['frames'][0]['text'] == 'prog+0x400100', t['sites'][0]['frames']
pats = {f['pattern'] for f in t['findings']}
assert pats == {'memory-leak', 'late-free'}, pats
assert t['patterns']['early-allocation']['available'] is False
assert len(t['series']) == 1000 and max(x[1] for x in t['series']) == 1220320
assert len(t['lifetime_buckets']['time']) == len(t['sites'][0]['lifetime_time'])
names = sorted(f['pattern'] for f in p['findings'])
assert names == ['dead-write', 'early-allocation', 'late-deallocation', 'memory-leak', 'redundant-allocation',
                 'redundant-allocation', 'temporary-idleness', 'unused-allocation'], names
assert p['logical_unit'] == 'API levels'
for f in p['findings']:
    assert f['suggestion'] and f['worst']['size'] > 0
print('report_json: ok')
PY
